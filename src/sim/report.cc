#include "sim/report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <span>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/json_writer.h"
#include "core/stats/samples.h"

namespace warmroute::sim {
namespace {

// Arrays of numbers, as the load series are kept.
void IntArray(JsonWriter& j, std::span<const int64_t> values) {
  j.BeginArray();
  for (int64_t v : values) j.Int(v);
  j.EndArray();
}
void FloatArray(JsonWriter& j, std::span<const float> values) {
  j.BeginArray();
  for (float v : values) j.Float(v);
  j.EndArray();
}

void WriteFigures(JsonWriter& j, const Figures& f) {
  j.Key("hit_rate");
  j.Double(f.hit_rate);
  j.Key("ttft_p50_s");
  j.Double(f.ttft_p50_s);
  j.Key("ttft_p90_s");
  j.Double(f.ttft_p90_s);
  j.Key("ttft_p99_s");
  j.Double(f.ttft_p99_s);
  j.Key("ttft_mean_s");
  j.Double(f.ttft_mean_s);
  j.Key("e2e_p50_s");
  j.Double(f.e2e_p50_s);
  j.Key("requests_per_s");
  j.Double(f.requests_per_s);
  j.Key("output_tokens_per_s");
  j.Double(f.output_tokens_per_s);
  j.Key("prefill_imbalance");
  j.Double(f.prefill_imbalance);
  j.Key("busy_imbalance");
  j.Double(f.busy_imbalance);
  j.Key("preemptions");
  j.Int(f.preemptions);
  j.Key("finished");
  j.Int(f.finished);
  j.Key("failed");
  j.Int(f.failed);
}

void WriteHitSeries(JsonWriter& j, const HitRateSeries& series) {
  j.BeginObject();
  j.Key("window_s");
  j.Double(series.window_s);
  j.Key("origin_s");
  j.Double(series.origin_s);
  j.Key("requests");
  IntArray(j, series.requests);
  j.Key("prompt_tokens");
  IntArray(j, series.prompt_tokens);
  j.Key("cached_tokens");
  IntArray(j, series.cached_tokens);
  j.Key("hit_rate");
  j.BeginArray();
  for (size_t k = 0; k < series.size(); ++k) j.Double(series.hit_rate(k));
  j.EndArray();
  j.EndObject();
}

void WriteMembership(JsonWriter& j, const RunResult& run, const DipOptions& options) {
  const MembershipChange& change = *run.membership;
  const double at_s = ToSeconds(change.at);
  const DipFigures f = AnalyseDip(run.hit_series, at_s, options);
  j.BeginObject();
  j.Key("change");
  j.String(DescribeMembershipChange(change));
  j.Key("kind");
  j.String(MembershipKindName(change.kind));
  j.Key("replica");
  j.Int(change.replica);
  j.Key("at_s");
  j.Double(at_s);
  j.Key("baseline_s");
  j.Double(options.baseline_s);
  j.Key("tolerance_pp");
  j.Double(options.tolerance_pp);
  j.Key("hold_windows");
  j.Int(options.hold_windows);
  j.Key("hit_rate_before");
  j.Double(f.before);
  j.Key("lowest_window_before");
  j.Double(f.before_min);
  j.Key("dip_hit_rate");
  j.Double(f.dip);
  j.Key("dip_pp");
  j.Double(f.dip_pp);
  j.Key("dip_at_s");
  j.Double(f.dip_at_s);
  j.Key("recovery_s");
  j.Double(f.recovery_s.value_or(DipFigures::kNaN));
  j.Key("hit_rate_after");
  j.Double(f.after);
  j.Key("settle_s");
  j.Double(f.settle_s.value_or(DipFigures::kNaN));
  j.Key("windows_before");
  j.Int(f.windows_before);
  j.Key("windows_after");
  j.Int(f.windows_after);
  j.Key("hit_rate_first_minute");
  j.Double(f.first_minute);
  j.Key("first_minute_drop_pp");
  j.Double(f.first_minute_drop_pp);
  j.Key("ttft_p99_minute_before_s");
  j.Double(run.ttft_before_change_s.empty() ? DipFigures::kNaN
                                            : run.ttft_before_change_s.Percentile(0.99));
  j.Key("ttft_p99_minute_after_s");
  j.Double(run.ttft_after_change_s.empty() ? DipFigures::kNaN
                                           : run.ttft_after_change_s.Percentile(0.99));
  j.Key("prewarm");
  j.BeginObject();
  j.Key("enabled");
  j.Bool(run.prewarm.enabled);
  j.Key("planned");
  j.Int(run.prewarm.planner.planned);
  j.Key("sent");
  j.Int(run.prewarm.planner.sent);
  j.Key("finished");
  j.Int(run.prewarm.finished);
  j.Key("join");
  j.Int(run.prewarm.join);
  j.Key("handoff");
  j.Int(run.prewarm.handoff);
  j.Key("failed");
  j.Int(run.prewarm.failed);
  j.Key("prompt_tokens");
  j.Int(run.prewarm.prompt_tokens);
  j.Key("cached_tokens");
  j.Int(run.prewarm.cached_tokens);
  j.Key("dropped_warm");
  j.Int(run.prewarm.planner.dropped_warm);
  j.Key("dropped_gone");
  j.Int(run.prewarm.planner.dropped_gone);
  j.Key("dropped_stale");
  j.Int(run.prewarm.planner.dropped_stale);
  j.EndObject();
  j.Key("requests_to_replica_after_change");
  j.Int(change.replica < run.replicas.size() ? run.replicas[change.replica].requests_after_change
                                             : 0);
  j.EndObject();
}

void WriteRun(JsonWriter& j, const RunResult& run, const DipOptions& dip) {
  j.BeginObject();
  j.Key("name");
  j.String(run.name);
  WriteFigures(j, ComputeFigures(run));
  j.Key("arrived");
  j.Int(run.arrived);
  j.Key("prompt_tokens");
  j.Int(run.prompt_tokens);
  j.Key("cached_tokens");
  j.Int(run.cached_tokens);
  j.Key("generated_tokens");
  j.Int(run.generated_tokens);
  j.Key("reasons");
  j.BeginObject();
  for (const auto& [reason, count] : run.reasons) {
    j.Key(reason);
    j.Int(count);
  }
  j.EndObject();
  j.Key("router");
  j.BeginObject();
  j.Key("predicted_cached_tokens");
  j.Int(run.router.predicted_cached_tokens);
  j.Key("reported_cached_tokens");
  j.Int(run.router.reported_cached_tokens);
  j.Key("corrections");
  j.Int(run.router.corrections);
  j.EndObject();
  j.Key("prefix_mode");
  j.String(run.prefix_mode);
  if (run.index_error_requests > 0) {
    j.Key("index_error");
    j.Double(run.index_error());
  }
  if (run.gossip.enabled) {
    j.Key("gossip");
    j.BeginObject();
    j.Key("messages");
    j.Int(run.gossip.messages);
    j.Key("bytes");
    j.Int(run.gossip.bytes);
    j.Key("lost");
    j.Int(run.gossip.lost);
    j.Key("placements");
    j.Int(run.gossip.placements);
    j.EndObject();
  }
  if (run.prefix_mode == "precise") {
    const RunResult::KvEventTotals& e = run.kv_events;
    j.Key("kv_events");
    j.BeginObject();
    j.Key("published");
    j.Int(e.published);
    j.Key("lost");
    j.Int(e.lost);
    j.Key("applied");
    j.Int(e.applied);
    j.Key("replayed");
    j.Int(e.replayed);
    j.Key("missed");
    j.Int(e.missed);
    j.Key("replays_requested");
    j.Int(e.replays_requested);
    j.Key("rebuilds");
    j.Int(e.rebuilds);
    j.Key("routed_uncertain");
    j.Int(e.routed_uncertain);
    j.Key("unattributed_blocks");
    j.Int(e.unattributed_blocks);
    j.Key("fleet_attributed_blocks");
    j.Int(e.fleet_attributed_blocks);
    j.EndObject();
  }
  j.Key("replicas");
  j.BeginArray();
  for (const ReplicaTotals& r : run.replicas) {
    j.BeginObject();
    j.Key("requests");
    j.Int(r.requests);
    j.Key("requests_after_change");
    j.Int(r.requests_after_change);
    j.Key("prompt_tokens");
    j.Int(r.prompt_tokens);
    j.Key("cached_tokens");
    j.Int(r.cached_tokens);
    j.Key("prefill_tokens");
    j.Int(r.prefill_tokens);
    j.Key("generated_tokens");
    j.Int(r.generated_tokens);
    j.Key("preemptions");
    j.Int(r.preemptions);
    j.Key("steps");
    j.Int(r.steps);
    j.Key("busy_s");
    j.Double(r.busy_s);
    j.EndObject();
  }
  j.EndArray();
  j.Key("series");
  j.BeginObject();
  j.Key("interval_s");
  j.Double(run.series.interval_s);
  j.Key("queue");
  j.BeginArray();
  for (const auto& s : run.series.queue) FloatArray(j, s);
  j.EndArray();
  j.Key("prefill_tokens_per_s");
  j.BeginArray();
  for (const auto& s : run.series.prefill_tps) FloatArray(j, s);
  j.EndArray();
  j.EndObject();
  j.Key("hit_rate_series");
  WriteHitSeries(j, run.hit_series);
  if (run.membership) {
    j.Key("membership");
    WriteMembership(j, run, dip);
  }
  j.EndObject();
}

absl::Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text;
  file.close();
  // The stream failed in open(2), write(2) or close(2): errno says why (ENOENT, EACCES, ENOSPC).
  if (!file) return absl::InternalError(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  return absl::OkStatus();
}

void WriteHeader(JsonWriter& j, const ReportHeader& header) {
  j.Key("workload");
  j.String(header.workload);
  j.Key("fleet");
  j.String(header.fleet);
  j.Key("requests");
  j.Int(header.requests);
  j.Key("seed");
  j.Int(static_cast<int64_t>(header.seed));
  j.Key("arrivals");
  j.String(header.arrivals);
  j.Key("network_delay_ms");
  j.Double(header.network_delay_ms);
  j.Key("gateways");
  j.Int(header.gateways);
  j.Key("gateway_assignment");
  j.String(header.gateway_assignment);
  if (!header.gossip.empty()) {
    j.Key("gossip");
    j.String(header.gossip);
  }
  j.Key("prefix_mode");
  j.String(header.prefix_mode);
  if (!header.kv_events.empty()) {
    j.Key("kv_events");
    j.String(header.kv_events);
  }
  j.Key("scrape_interval_ms");
  j.Double(header.scrape_interval_ms);
  j.Key("wall_s");
  j.Double(header.wall_s);
  j.Key("simulated_requests");
  j.Int(header.simulated_requests);
  j.Key("simulated_requests_per_wall_s");
  j.Double(header.wall_s > 0 ? static_cast<double>(header.simulated_requests) / header.wall_s : 0);
}

std::string Percent(double fraction) {
  return std::isnan(fraction) ? "n/a" : absl::StrFormat("%.1f%%", 100 * fraction);
}
std::string Millis(double seconds) { return absl::StrFormat("%.0f", 1000 * seconds); }

}  // namespace

Figures ComputeFigures(const RunResult& run) {
  Figures f;
  f.hit_rate = run.prompt_tokens > 0
                   ? static_cast<double>(run.cached_tokens) / static_cast<double>(run.prompt_tokens)
                   : 0;
  f.ttft_p50_s = run.ttft_s.Percentile(0.50);
  f.ttft_p90_s = run.ttft_s.Percentile(0.90);
  f.ttft_p99_s = run.ttft_s.Percentile(0.99);
  f.ttft_mean_s = run.ttft_s.Mean();
  f.e2e_p50_s = run.e2e_s.Percentile(0.50);
  const double span = run.last_finish_s - run.first_arrival_s;
  if (span > 0) {
    f.requests_per_s = static_cast<double>(run.finished) / span;
    f.output_tokens_per_s = static_cast<double>(run.generated_tokens) / span;
  }
  std::vector<double> prefill;
  std::vector<double> busy;
  for (const ReplicaTotals& r : run.replicas) {
    prefill.push_back(static_cast<double>(r.prefill_tokens));
    busy.push_back(r.busy_s);
    f.preemptions += r.preemptions;
  }
  f.prefill_imbalance = stats::MaxOverMean(prefill);
  f.busy_imbalance = stats::MaxOverMean(busy);
  f.finished = run.finished;
  f.failed = run.failed;
  return f;
}

double InfiniteHitRate(const RunResult& pooled) {
  return pooled.infinite_prompt_tokens > 0 ? static_cast<double>(pooled.infinite_hit_tokens) /
                                                 static_cast<double>(pooled.infinite_prompt_tokens)
                                           : 0;
}

std::string FormatTable(const std::vector<RunResult>& runs, const RunResult* pooled) {
  size_t width = 20;
  for (const RunResult& run : runs) width = std::max(width, run.name.size());
  std::string out =
      absl::StrFormat("%-*s %6s %8s %8s %8s %8s %7s %9s %7s %7s %7s %6s\n", static_cast<int>(width),
                      "policy", "hit", "ttft50", "ttft90", "ttft99", "e2e50", "req/s", "outtok/s",
                      "pf-imb", "busy-imb", "preempt", "failed");
  out +=
      absl::StrFormat("%-*s %6s %8s %8s %8s %8s %7s %9s %7s %7s %7s %6s\n", static_cast<int>(width),
                      "", "", "(ms)", "(ms)", "(ms)", "(s)", "", "", "max/avg", "max/avg", "", "");
  for (const RunResult& run : runs) {
    const Figures f = ComputeFigures(run);
    out += absl::StrFormat("%-*s %6s %8s %8s %8s %8.2f %7.2f %9.0f %7.2f %7.2f %7d %6d\n",
                           static_cast<int>(width), run.name, Percent(f.hit_rate),
                           Millis(f.ttft_p50_s), Millis(f.ttft_p90_s), Millis(f.ttft_p99_s),
                           f.e2e_p50_s, f.requests_per_s, f.output_tokens_per_s,
                           f.prefill_imbalance, f.busy_imbalance, f.preemptions, f.failed);
  }
  if (pooled != nullptr) {
    out += absl::StrFormat("%-*s %6s   (one engine, the fleet's KV capacity and compute)\n",
                           static_cast<int>(width), "pooled-cache bound",
                           Percent(ComputeFigures(*pooled).hit_rate));
    if (pooled->infinite_prompt_tokens > 0) {
      out += absl::StrFormat("%-*s %6s   (every repeated block hits)\n", static_cast<int>(width),
                             "infinite-cache bound", Percent(InfiniteHitRate(*pooled)));
    }
  }
  return out;
}

absl::Status WriteJson(const std::string& path, const ReportHeader& header,
                       const std::vector<RunResult>& runs, const RunResult* pooled) {
  std::string out;
  JsonWriter j(&out);
  j.BeginObject();
  WriteHeader(j, header);
  j.Key("policies");
  j.BeginArray();
  for (const RunResult& run : runs) WriteRun(j, run, header.dip);
  j.EndArray();
  j.Key("bounds");
  j.BeginObject();
  if (pooled != nullptr) {
    j.Key("pooled_cache_hit_rate");
    j.Double(ComputeFigures(*pooled).hit_rate);
    if (pooled->infinite_prompt_tokens > 0) {
      j.Key("infinite_cache_hit_rate");
      j.Double(InfiniteHitRate(*pooled));
    }
    j.Key("pooled_run");
    WriteRun(j, *pooled, header.dip);
  }
  j.EndObject();
  j.EndObject();
  return WriteText(path, out + "\n");
}

absl::Status WriteSweepJson(const std::string& path, const ReportHeader& header,
                            const std::vector<SweepPoint>& sweep) {
  std::string out;
  JsonWriter j(&out);
  j.BeginObject();
  WriteHeader(j, header);
  j.Key("sweep");
  j.BeginArray();
  for (const SweepPoint& point : sweep) {
    j.BeginObject();
    j.Key("load");
    j.Double(point.load);
    j.Key("rate_per_s");
    j.Double(point.rate_per_s);
    if (point.pooled_hit_rate >= 0) {
      j.Key("pooled_cache_hit_rate");
      j.Double(point.pooled_hit_rate);
    }
    j.Key("policies");
    j.BeginArray();
    for (size_t i = 0; i < point.policies.size(); ++i) {
      j.BeginObject();
      j.Key("name");
      j.String(point.policies[i]);
      WriteFigures(j, point.figures[i]);
      j.EndObject();
    }
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  return WriteText(path, out + "\n");
}

std::string FormatMarkdownTable(const std::vector<RunResult>& runs, const RunResult* pooled) {
  std::string out =
      "| policy | hit rate | TTFT p50 (ms) | TTFT p90 (ms) | TTFT p99 (ms) | E2E p50 (s) | req/s | "
      "output tok/s | prefill imbalance | busy imbalance | preemptions | failed |\n"
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const RunResult& run : runs) {
    const Figures f = ComputeFigures(run);
    out +=
        absl::StrFormat("| %s | %s | %s | %s | %s | %.2f | %.2f | %.0f | %.2f | %.2f | %d | %d |\n",
                        run.name, Percent(f.hit_rate), Millis(f.ttft_p50_s), Millis(f.ttft_p90_s),
                        Millis(f.ttft_p99_s), f.e2e_p50_s, f.requests_per_s, f.output_tokens_per_s,
                        f.prefill_imbalance, f.busy_imbalance, f.preemptions, f.failed);
  }
  if (pooled != nullptr) {
    out += absl::StrFormat("| *pooled-cache bound* | %s | | | | | | | | | | |\n",
                           Percent(ComputeFigures(*pooled).hit_rate));
    if (pooled->infinite_prompt_tokens > 0) {
      out += absl::StrFormat("| *infinite-cache bound* | %s | | | | | | | | | | |\n",
                             Percent(InfiniteHitRate(*pooled)));
    }
  }
  return out;
}

std::string FormatIndexTable(const std::vector<RunResult>& runs, bool markdown) {
  if (runs.empty()) return "";
  const bool precise = runs.front().prefix_mode == "precise";
  std::string out;
  if (markdown) {
    out = precise ? "| policy | index error | KV-event messages | lost | applied | replayed | "
                    "missed | rebuilds | routed to uncertain |\n"
                    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
                  : "| policy | index error |\n| --- | ---: |\n";
  } else {
    out = absl::StrFormat("prefix mode %s; index error = mean |predicted - engine-reported "
                          "cached tokens| / prompt tokens\n",
                          runs.front().prefix_mode);
    out += absl::StrFormat("%-20s %9s", "policy", "idx-err");
    if (precise) {
      out += absl::StrFormat(" %9s %7s %9s %8s %7s %8s %9s", "messages", "lost", "applied",
                             "replayed", "missed", "rebuilds", "uncertain");
    }
    out += "\n";
  }
  for (const RunResult& run : runs) {
    const RunResult::KvEventTotals& e = run.kv_events;
    const std::string error = absl::StrFormat("%.3f", run.index_error());
    if (markdown) {
      out += absl::StrFormat("| %s | %s |", run.name, error);
      if (precise) {
        out += absl::StrFormat(" %d | %d | %d | %d | %d | %d | %d |", e.published, e.lost,
                               e.applied, e.replayed, e.missed, e.rebuilds, e.routed_uncertain);
      }
    } else {
      out += absl::StrFormat("%-20s %9s", run.name, error);
      if (precise) {
        out += absl::StrFormat(" %9d %7d %9d %8d %7d %8d %9d", e.published, e.lost, e.applied,
                               e.replayed, e.missed, e.rebuilds, e.routed_uncertain);
      }
    }
    out += "\n";
  }
  return out;
}

std::string FormatSweep(const std::vector<SweepPoint>& sweep, bool markdown) {
  if (sweep.empty()) return "";
  const std::vector<std::string>& policies = sweep.front().policies;
  size_t width = 20;
  for (const std::string& name : policies) width = std::max(width, name.size());
  const int w = static_cast<int>(width);
  std::string out;
  if (markdown) {
    out += "| policy |";
    for (const SweepPoint& p : sweep) absl::StrAppendFormat(&out, " %.0f%% load |", 100 * p.load);
    out += "\n| --- |";
    for (size_t i = 0; i < sweep.size(); ++i) out += " ---: |";
    out += "\n";
  } else {
    out += absl::StrFormat("TTFT p99 in ms (hit rate) per load\n%-*s", w, "policy");
    for (const SweepPoint& p : sweep) {
      out += absl::StrFormat(" %15s", absl::StrFormat("%.0f%% load", 100 * p.load));
    }
    out += "\n";
  }
  for (size_t i = 0; i < policies.size(); ++i) {
    out +=
        markdown ? absl::StrCat("| ", policies[i], " |") : absl::StrFormat("%-*s", w, policies[i]);
    for (const SweepPoint& p : sweep) {
      const Figures& f = p.figures[i];
      const std::string cell =
          absl::StrFormat("%s (%s)", Millis(f.ttft_p99_s), Percent(f.hit_rate));
      out += markdown ? absl::StrCat(" ", cell, " |") : absl::StrFormat(" %15s", cell);
    }
    out += "\n";
  }
  if (sweep.front().pooled_hit_rate >= 0) {
    out += markdown ? "| *pooled-cache bound* |" : absl::StrFormat("%-*s", w, "pooled-cache bound");
    for (const SweepPoint& p : sweep) {
      const std::string cell = absl::StrFormat("(%s)", Percent(p.pooled_hit_rate));
      out += markdown ? absl::StrCat(" ", cell, " |") : absl::StrFormat(" %15s", cell);
    }
    out += "\n";
  }
  return out;
}

}  // namespace warmroute::sim

namespace warmroute::sim {

std::string FormatDipTable(const std::vector<RunResult>& runs, const DipOptions& options,
                           bool markdown) {
  const RunResult* first = nullptr;
  for (const RunResult& run : runs) {
    if (run.membership && first == nullptr) first = &run;
  }
  if (first == nullptr) return "";
  const MembershipChange& change = *first->membership;
  const std::string replica = absl::StrCat("r", change.replica);
  const double window = first->hit_series.window_s;
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"policy", absl::StrFormat("hit before (last %g s)", options.baseline_s),
                  absl::StrFormat("lowest %g s window before", window), "dip (lowest window after)",
                  "drop (pp)", "dip at (s after)", "recovery (s)",
                  absl::StrFormat("hit after (last %g s)", options.baseline_s), "settled (s)",
                  "hit (whole run)", absl::StrCat("requests to ", replica, " after (share)"),
                  absl::StrFormat("hit in the %g s after", options.after_s),
                  "its drop (pp)", "TTFT p99 60 s before / after (ms)",
                  "prewarm requests (prompt tokens)"});
  for (const RunResult& run : runs) {
    if (!run.membership) continue;
    const DipFigures f = AnalyseDip(run.hit_series, ToSeconds(run.membership->at), options);
    int64_t all_after = 0;
    for (const ReplicaTotals& r : run.replicas) all_after += r.requests_after_change;
    const int64_t changed_after = change.replica < run.replicas.size()
                                      ? run.replicas[change.replica].requests_after_change
                                      : 0;
    const double share = all_after > 0
                             ? static_cast<double>(changed_after) / static_cast<double>(all_after)
                             : DipFigures::kNaN;
    rows.push_back({run.name, Percent(f.before), Percent(f.before_min), Percent(f.dip),
                    std::isnan(f.dip_pp) ? "n/a" : absl::StrFormat("%.1f", f.dip_pp),
                    std::isnan(f.dip_at_s) ? "n/a" : absl::StrFormat("%g", f.dip_at_s),
                    f.recovery_s ? absl::StrFormat("%g", *f.recovery_s) : "not recovered",
                    Percent(f.after), f.settle_s ? absl::StrFormat("%g", *f.settle_s) : "n/a",
                    Percent(ComputeFigures(run).hit_rate),
                    absl::StrFormat("%d (%s)", changed_after, Percent(share)),
                    Percent(f.first_minute),
                    std::isnan(f.first_minute_drop_pp)
                        ? "n/a"
                        : absl::StrFormat("%.1f", f.first_minute_drop_pp),
                    absl::StrFormat("%.0f / %.0f", 1000 * run.ttft_before_change_s.Percentile(0.99),
                                    1000 * run.ttft_after_change_s.Percentile(0.99)),
                    run.prewarm.enabled
                        ? absl::StrFormat("%d (%d)", run.prewarm.finished,
                                          run.prewarm.prompt_tokens)
                        : "off"});
  }
  std::string out;
  if (markdown) {
    for (size_t r = 0; r < rows.size(); ++r) {
      out += absl::StrCat("| ", absl::StrJoin(rows[r], " | "), " |\n");
      if (r == 0) {
        out += "| ---";
        for (size_t c = 1; c < rows[r].size(); ++c) out += " | ---:";
        out += " |\n";
      }
    }
    return out;
  }
  out = absl::StrFormat(
      "membership change: %s; hit rate per %g s window of arrivals; recovery (settled): the "
      "first window from which %d windows in a row are within %g pp of the hit rate before (after)"
      "\n",
      DescribeMembershipChange(change), window, options.hold_windows, options.tolerance_pp);
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      out += c == 0 ? absl::StrFormat("%-*s", static_cast<int>(width[c]), row[c])
                    : absl::StrFormat("  %*s", static_cast<int>(width[c]), row[c]);
    }
    out += "\n";
  }
  return out;
}

}  // namespace warmroute::sim
