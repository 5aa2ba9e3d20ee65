#include "loadgen/bench_result.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/stats/samples.h"

namespace warmroute::loadgen {
namespace {

Percentiles Of(const stats::Samples& samples) {
  Percentiles p;
  p.count = samples.size();
  if (samples.empty()) return p;
  p.p50 = samples.Percentile(0.5);
  p.p90 = samples.Percentile(0.9);
  p.p99 = samples.Percentile(0.99);
  p.mean = samples.Mean();
  return p;
}

void FillBackends(const std::map<std::string, double>& counts, std::string source, Summary* s) {
  double total = 0;
  std::vector<double> values;
  for (const auto& [name, n] : counts) {
    total += n;
    values.push_back(n);
  }
  if (total <= 0) return;
  for (const auto& [name, n] : counts) s->backends.push_back({name, n, n / total});
  s->backend_source = std::move(source);
  s->load_skew = stats::MaxOverMean(values);
}

}  // namespace

std::string HttpErrorKind(int status) { return absl::StrCat(error_kind::kHttp, status); }

Summary Summarize(const BenchRun& run) {
  Summary s;
  s.requests = run.requests.size();
  stats::Samples ttft, itl, e2e;
  double first_send = -1, last_end = -1;
  std::map<std::string, double> by_header;
  for (const RequestRecord& r : run.requests) {
    if (r.send_s >= 0) {
      ++s.sent;
      first_send = first_send < 0 ? r.send_s : std::min(first_send, r.send_s);
    }
    if (!r.backend.empty()) by_header[r.backend] += 1;
    if (!r.ok()) {
      if (r.send_s >= 0 || !r.error_kind.empty()) {
        ++s.failed;
        ++s.errors[r.error_kind.empty() ? error_kind::kInterrupted : r.error_kind];
      }
      continue;
    }
    ++s.succeeded;
    last_end = std::max(last_end, r.send_s + r.e2e_s);
    if (r.ttft_s >= 0) ttft.Add(r.ttft_s);
    for (double gap : r.itl_s) itl.Add(gap);
    e2e.Add(r.e2e_s);
    if (r.usage_reported) {
      s.prompt_tokens += r.prompt_tokens;
      s.cached_tokens += r.cached_tokens;
    }
    s.completion_tokens += r.completion_tokens;
  }
  if (first_send >= 0 && last_end > first_send) s.duration_s = last_end - first_send;
  if (s.duration_s > 0) {
    s.requests_per_s = static_cast<double>(s.succeeded) / s.duration_s;
    s.output_tokens_per_s = static_cast<double>(s.completion_tokens) / s.duration_s;
  }
  s.ttft_s = Of(ttft);
  s.itl_s = Of(itl);
  s.e2e_s = Of(e2e);
  if (s.prompt_tokens > 0) {
    s.token_hit_rate = static_cast<double>(s.cached_tokens) / static_cast<double>(s.prompt_tokens);
  }

  double hits = 0, queries = 0;
  std::map<std::string, double> by_engine;
  bool any_engine = false;
  for (const EngineSeries& e : run.engines) {
    if (e.scrapes.size() < 2) continue;
    const EngineCounters& a = e.scrapes.front().second;
    const EngineCounters& b = e.scrapes.back().second;
    any_engine = true;
    hits += std::max(0.0, b.prefix_cache_hits - a.prefix_cache_hits);
    queries += std::max(0.0, b.prefix_cache_queries - a.prefix_cache_queries);
    by_engine[e.url] += std::max(0.0, b.request_success - a.request_success);
  }
  if (any_engine && queries > 0) s.engine_hit_rate = hits / queries;

  if (!by_header.empty()) {
    FillBackends(by_header, "header", &s);
  } else if (by_engine.size() > 0) {
    FillBackends(by_engine, "engine_metrics", &s);
  }
  return s;
}

}  // namespace warmroute::loadgen
