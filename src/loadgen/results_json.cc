#include "loadgen/results_json.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "net/json_writer.h"
#include "simdjson.h"

namespace warmroute::loadgen {
namespace {

// A measured time or null (-1 = not measured).
void Time(net::JsonWriter& w, std::string_view key, double value) {
  w.Key(key);
  if (value < 0) {
    w.Null();
  } else {
    w.Double(value);
  }
}

void WritePercentiles(net::JsonWriter& w, std::string_view key, const Percentiles& p) {
  w.Key(key).BeginObject();
  w.Key("p50").Double(p.p50).Key("p90").Double(p.p90).Key("p99").Double(p.p99);
  w.Key("mean").Double(p.mean).Key("count").Uint(p.count);
  w.EndObject();
}

void Optional(net::JsonWriter& w, std::string_view key, const std::optional<double>& value) {
  w.Key(key);
  if (value) {
    w.Double(*value);
  } else {
    w.Null();
  }
}

void WriteSummary(net::JsonWriter& w, const Summary& s) {
  w.BeginObject();
  w.Key("requests").Uint(s.requests).Key("sent").Uint(s.sent);
  w.Key("succeeded").Uint(s.succeeded).Key("failed").Uint(s.failed);
  w.Key("errors").BeginObject();
  for (const auto& [kind, n] : s.errors) w.Key(kind).Uint(n);
  w.EndObject();
  w.Key("duration_s").Double(s.duration_s);
  w.Key("requests_per_s").Double(s.requests_per_s);
  w.Key("output_tokens_per_s").Double(s.output_tokens_per_s);
  w.Key("prompt_tokens").Int(s.prompt_tokens).Key("cached_tokens").Int(s.cached_tokens);
  w.Key("completion_tokens").Int(s.completion_tokens);
  WritePercentiles(w, "ttft_s", s.ttft_s);
  WritePercentiles(w, "itl_s", s.itl_s);
  WritePercentiles(w, "e2e_s", s.e2e_s);
  Optional(w, "token_hit_rate", s.token_hit_rate);
  Optional(w, "engine_hit_rate", s.engine_hit_rate);
  w.Key("backend_source").String(s.backend_source);
  Optional(w, "load_skew", s.load_skew);
  w.Key("backends").BeginArray();
  for (const BackendShare& b : s.backends) {
    w.BeginObject().Key("name").String(b.name).Key("requests").Double(b.requests);
    w.Key("share").Double(b.share).EndObject();
  }
  w.EndArray();
  w.EndObject();
}

double NumberOr(simdjson::dom::element e, double fallback) {
  double d;
  if (e.get_double().get(d) == simdjson::SUCCESS) return d;
  int64_t i;
  if (e.get_int64().get(i) == simdjson::SUCCESS) return static_cast<double>(i);
  uint64_t u;
  if (e.get_uint64().get(u) == simdjson::SUCCESS) return static_cast<double>(u);
  return fallback;
}

double Field(simdjson::dom::element e, std::string_view key, double fallback = 0) {
  simdjson::dom::element v;
  if (e[key].get(v) != simdjson::SUCCESS) return fallback;
  return NumberOr(v, fallback);
}

std::optional<double> OptionalField(simdjson::dom::element e, std::string_view key) {
  simdjson::dom::element v;
  if (e[key].get(v) != simdjson::SUCCESS || v.is_null()) return std::nullopt;
  double d = NumberOr(v, -1);
  if (d < 0) return std::nullopt;
  return d;
}

Percentiles ReadPercentiles(simdjson::dom::element e) {
  Percentiles p;
  p.p50 = Field(e, "p50");
  p.p90 = Field(e, "p90");
  p.p99 = Field(e, "p99");
  p.mean = Field(e, "mean");
  p.count = static_cast<size_t>(Field(e, "count"));
  return p;
}

}  // namespace

std::string ResultsJson(const BenchRun& run, const Summary& summary) {
  std::string out;
  out.reserve(512 + 400 * run.requests.size());
  net::JsonWriter w(&out);
  w.BeginObject();
  w.Key("name").String(run.config.name);
  w.Key("config").BeginObject();
  w.Key("urls").BeginArray();
  for (const std::string& url : run.config.urls) w.String(url);
  w.EndArray();
  w.Key("workload").String(run.config.workload);
  w.Key("requests").Int(run.config.requests).Key("rate").Double(run.config.rate);
  w.Key("concurrency").Int(run.config.concurrency).Key("seed").Uint(run.config.seed);
  w.Key("stream").Bool(run.config.stream).Key("model").String(run.config.model);
  w.EndObject();
  w.Key("interrupted").Bool(run.interrupted).Key("stop_reason").String(run.stop_reason);
  w.Key("summary");
  WriteSummary(w, summary);
  w.Key("engines").BeginArray();
  for (const EngineSeries& e : run.engines) {
    w.BeginObject().Key("url").String(e.url).Key("last_error").String(e.last_error);
    w.Key("scrapes").BeginArray();
    for (const auto& [t, c] : e.scrapes) {
      w.BeginObject().Key("t_s").Double(t);
      w.Key("prefix_cache_hits").Double(c.prefix_cache_hits);
      w.Key("prefix_cache_queries").Double(c.prefix_cache_queries);
      w.Key("request_success").Double(c.request_success).EndObject();
    }
    w.EndArray().EndObject();
  }
  w.EndArray();
  w.Key("requests").BeginArray();
  for (const RequestRecord& r : run.requests) {
    out += "\n";
    w.BeginObject();
    w.Key("id").Uint(r.id).Key("session").Uint(r.session).Key("turn").Int(r.turn);
    w.Key("arrival_s").Double(r.arrival_s);
    Time(w, "send_s", r.send_s);
    Time(w, "ttft_s", r.ttft_s);
    Time(w, "e2e_s", r.e2e_s);
    w.Key("itl_s").BeginArray();
    for (double gap : r.itl_s) w.Double(gap);
    w.EndArray();
    w.Key("prompt_tokens").Int(r.prompt_tokens).Key("completion_tokens").Int(r.completion_tokens);
    w.Key("cached_tokens").Int(r.cached_tokens).Key("usage_reported").Bool(r.usage_reported);
    w.Key("status").Int(r.http_status).Key("error_kind").String(r.error_kind);
    w.Key("error").String(r.error).Key("backend").String(r.backend);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  out += "\n";
  return out;
}

absl::StatusOr<SavedRun> ParseResultsJson(std::string_view json, const std::string& source) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto error = parser.parse(json.data(), json.size()).get(root); error) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not JSON (", simdjson::error_message(error), ")"));
  }
  simdjson::dom::element summary;
  if (!root.is_object() || root["summary"].get(summary) != simdjson::SUCCESS ||
      !summary.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not a `warmroute bench` results.json (no \"summary\" object)"));
  }
  SavedRun run;
  std::string_view name;
  if (root["name"].get_string().get(name) == simdjson::SUCCESS) run.name = std::string(name);
  Summary& s = run.summary;
  s.requests = static_cast<size_t>(Field(summary, "requests"));
  s.sent = static_cast<size_t>(Field(summary, "sent"));
  s.succeeded = static_cast<size_t>(Field(summary, "succeeded"));
  s.failed = static_cast<size_t>(Field(summary, "failed"));
  simdjson::dom::object errors;
  if (summary["errors"].get_object().get(errors) == simdjson::SUCCESS) {
    for (auto field : errors) {
      s.errors[std::string(field.key)] = static_cast<size_t>(NumberOr(field.value, 0));
    }
  }
  s.duration_s = Field(summary, "duration_s");
  s.requests_per_s = Field(summary, "requests_per_s");
  s.output_tokens_per_s = Field(summary, "output_tokens_per_s");
  s.prompt_tokens = static_cast<int64_t>(Field(summary, "prompt_tokens"));
  s.cached_tokens = static_cast<int64_t>(Field(summary, "cached_tokens"));
  s.completion_tokens = static_cast<int64_t>(Field(summary, "completion_tokens"));
  simdjson::dom::element p;
  if (summary["ttft_s"].get(p) == simdjson::SUCCESS) s.ttft_s = ReadPercentiles(p);
  if (summary["itl_s"].get(p) == simdjson::SUCCESS) s.itl_s = ReadPercentiles(p);
  if (summary["e2e_s"].get(p) == simdjson::SUCCESS) s.e2e_s = ReadPercentiles(p);
  s.token_hit_rate = OptionalField(summary, "token_hit_rate");
  s.engine_hit_rate = OptionalField(summary, "engine_hit_rate");
  s.load_skew = OptionalField(summary, "load_skew");
  std::string_view source_name;
  if (summary["backend_source"].get_string().get(source_name) == simdjson::SUCCESS) {
    s.backend_source = std::string(source_name);
  }
  simdjson::dom::array backends;
  if (summary["backends"].get_array().get(backends) == simdjson::SUCCESS) {
    for (simdjson::dom::element b : backends) {
      std::string_view n;
      if (b["name"].get_string().get(n) != simdjson::SUCCESS) continue;
      s.backends.push_back({std::string(n), Field(b, "requests"), Field(b, "share")});
    }
  }
  simdjson::dom::array requests;
  if (root["requests"].get_array().get(requests) == simdjson::SUCCESS) {
    for (simdjson::dom::element r : requests) {
      std::string_view kind;
      if (r["error_kind"].get_string().get(kind) == simdjson::SUCCESS && !kind.empty()) continue;
      if (std::optional<double> ttft = OptionalField(r, "ttft_s")) run.ttft_s.push_back(*ttft);
    }
  }
  return run;
}

absl::StatusOr<SavedRun> ReadResultsFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << file.rdbuf();
  return ParseResultsJson(text.str(), path);
}

}  // namespace warmroute::loadgen
