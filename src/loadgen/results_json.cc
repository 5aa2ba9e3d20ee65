#include "loadgen/results_json.h"

#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/json_writer.h"
#include "core/workload/file_text.h"
#include "core/workload/workload.h"
#include "simdjson.h"

namespace warmroute::loadgen {
namespace {

// A measured time or null (-1 = not measured).
void Time(JsonWriter& w, std::string_view key, double value) {
  w.Key(key);
  if (value < 0) {
    w.Null();
  } else {
    w.Double(value);
  }
}

void WritePercentiles(JsonWriter& w, std::string_view key, const Percentiles& p) {
  w.Key(key).BeginObject();
  w.Key("p50").Double(p.p50).Key("p90").Double(p.p90).Key("p99").Double(p.p99);
  w.Key("mean").Double(p.mean).Key("count").Uint(p.count);
  w.EndObject();
}

void Optional(JsonWriter& w, std::string_view key, const std::optional<double>& value) {
  w.Key(key);
  if (value) {
    w.Double(*value);
  } else {
    w.Null();
  }
}

void WriteSummary(JsonWriter& w, const Summary& s) {
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

// The reading side: every field `bench compare` uses is checked for its type and range, so a
// damaged or hand-edited file is refused naming the file and the field instead of printing
// garbage. A field that is absent keeps its default (files of older versions lack some).
class FieldReader {
 public:
  explicit FieldReader(const std::string& source) : source_(source) {}

  // A count: a whole number in [0, 2^53] (exact in a double).
  size_t Count(simdjson::dom::element parent, std::string_view key, std::string_view path) {
    simdjson::dom::element v;
    if (!Find(parent, key, &v)) return 0;
    return CountOf(v, key, path);
  }

  // `v`, the value at `key`, as a count.
  size_t CountOf(simdjson::dom::element v, std::string_view key, std::string_view path) {
    const std::optional<double> d = Number(v);
    if (!d || *d != std::floor(*d) || *d < 0 || *d > kMaxCount) {
      Fail(path, key, "must be a whole number in [0, 2^53]", v);
      return 0;
    }
    return static_cast<size_t>(*d);
  }

  // A finite number in [min, max]; null (the writer's non-finite value) reads as 0.
  double Real(simdjson::dom::element parent, std::string_view key, std::string_view path,
              double min, double max) {
    simdjson::dom::element v;
    if (!Find(parent, key, &v) || v.is_null()) return 0;
    return Checked(v, key, path, min, max).value_or(0);
  }

  // null (or absent), or a finite number in [min, max].
  std::optional<double> Optional(simdjson::dom::element parent, std::string_view key,
                                 std::string_view path, double min, double max) {
    simdjson::dom::element v;
    if (!Find(parent, key, &v) || v.is_null()) return std::nullopt;
    return Checked(v, key, path, min, max);
  }

  // A string (or absent: "").
  std::string String(simdjson::dom::element parent, std::string_view key, std::string_view path) {
    simdjson::dom::element v;
    if (!Find(parent, key, &v)) return "";
    std::string_view text;
    if (v.get_string().get(text) != simdjson::SUCCESS) {
      Fail(path, key, "must be a string", v);
      return "";
    }
    return std::string(text);
  }

  // The array at `key`: nullopt when absent, or (an error) not an array.
  std::optional<simdjson::dom::array> Array(simdjson::dom::element parent, std::string_view key,
                                            std::string_view path) {
    simdjson::dom::element v;
    if (!Find(parent, key, &v)) return std::nullopt;
    simdjson::dom::array array;
    if (v.get_array().get(array) != simdjson::SUCCESS) {
      Fail(path, key, "must be an array", v);
      return std::nullopt;
    }
    return array;
  }

  // The object at `key`: nullopt when absent, or (an error) not an object.
  std::optional<simdjson::dom::element> Object(simdjson::dom::element parent, std::string_view key,
                                               std::string_view path) {
    simdjson::dom::element v;
    if (!Find(parent, key, &v)) return std::nullopt;
    if (!v.is_object()) {
      Fail(path, key, "must be an object", v);
      return std::nullopt;
    }
    return v;
  }

  void Fail(std::string_view path, std::string_view key, std::string_view what,
            simdjson::dom::element value) {
    if (!status_.ok()) return;
    std::string text = simdjson::to_string(value);
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    status_ = absl::InvalidArgumentError(absl::StrCat(source_, ": ", std::string(path),
                                                      path.empty() ? "" : ".", std::string(key),
                                                      " ", std::string(what), ", got ", text));
  }

  const absl::Status& status() const { return status_; }

 private:
  static constexpr double kMaxCount = 9007199254740992.0;  // 2^53

  static bool Find(simdjson::dom::element parent, std::string_view key,
                   simdjson::dom::element* value) {
    return parent[key].get(*value) == simdjson::SUCCESS;
  }

  static std::optional<double> Number(simdjson::dom::element e) {
    if (double d = 0; e.get_double().get(d) == simdjson::SUCCESS) return d;
    return std::nullopt;
  }

  std::optional<double> Checked(simdjson::dom::element v, std::string_view key,
                                std::string_view path, double min, double max) {
    const std::optional<double> d = Number(v);
    if (!d || !(*d >= min && *d <= max)) {
      Fail(path, key, absl::StrCat("must be a number in [", min, ", ", max, "]"), v);
      return std::nullopt;
    }
    return d;
  }

  const std::string& source_;
  absl::Status status_;
};

// Times are bounded like a run's arrivals (workload::kMaxArrivalSeconds, about 3 years).
constexpr double kMaxSeconds = workload::kMaxArrivalSeconds;
constexpr double kMaxValue = std::numeric_limits<double>::max();

Percentiles ReadPercentiles(FieldReader& reader, simdjson::dom::element e, std::string_view path) {
  Percentiles p;
  p.p50 = reader.Real(e, "p50", path, 0, kMaxSeconds);
  p.p90 = reader.Real(e, "p90", path, 0, kMaxSeconds);
  p.p99 = reader.Real(e, "p99", path, 0, kMaxSeconds);
  p.mean = reader.Real(e, "mean", path, 0, kMaxSeconds);
  p.count = reader.Count(e, "count", path);
  return p;
}

}  // namespace

std::string ResultsJson(const BenchRun& run, const Summary& summary) {
  std::string out;
  out.reserve(512 + 400 * run.requests.size());
  JsonWriter w(&out);
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
  w.Key("api").String(run.config.api);
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
  FieldReader reader(source);
  run.name = reader.String(root, "name", "");
  Summary& s = run.summary;
  const std::string_view sum = "summary";
  s.requests = reader.Count(summary, "requests", sum);
  s.sent = reader.Count(summary, "sent", sum);
  s.succeeded = reader.Count(summary, "succeeded", sum);
  s.failed = reader.Count(summary, "failed", sum);
  if (std::optional<simdjson::dom::element> errors = reader.Object(summary, "errors", sum)) {
    simdjson::dom::object fields;
    if (errors->get_object().get(fields) == simdjson::SUCCESS) {
      for (auto field : fields) {
        s.errors[std::string(field.key)] = reader.CountOf(field.value, field.key, "summary.errors");
      }
    }
  }
  s.duration_s = reader.Real(summary, "duration_s", sum, 0, kMaxSeconds);
  s.requests_per_s = reader.Real(summary, "requests_per_s", sum, 0, kMaxValue);
  s.output_tokens_per_s = reader.Real(summary, "output_tokens_per_s", sum, 0, kMaxValue);
  s.prompt_tokens = static_cast<int64_t>(reader.Count(summary, "prompt_tokens", sum));
  s.cached_tokens = static_cast<int64_t>(reader.Count(summary, "cached_tokens", sum));
  s.completion_tokens = static_cast<int64_t>(reader.Count(summary, "completion_tokens", sum));
  for (auto [key, out] :
       {std::pair{"ttft_s", &s.ttft_s}, {"itl_s", &s.itl_s}, {"e2e_s", &s.e2e_s}}) {
    if (std::optional<simdjson::dom::element> p = reader.Object(summary, key, sum)) {
      *out = ReadPercentiles(reader, *p, absl::StrCat("summary.", key));
    }
  }
  s.token_hit_rate = reader.Optional(summary, "token_hit_rate", sum, 0, 1);
  s.engine_hit_rate = reader.Optional(summary, "engine_hit_rate", sum, 0, 1);
  s.load_skew = reader.Optional(summary, "load_skew", sum, 0, kMaxValue);
  s.backend_source = reader.String(summary, "backend_source", sum);
  if (std::optional<simdjson::dom::array> backends = reader.Array(summary, "backends", sum)) {
    size_t i = 0;
    for (simdjson::dom::element b : *backends) {
      const std::string path = absl::StrCat("summary.backends[", i++, "]");
      s.backends.push_back({reader.String(b, "name", path),
                            reader.Real(b, "requests", path, 0, kMaxValue),
                            reader.Real(b, "share", path, 0, 1)});
    }
  }
  if (std::optional<simdjson::dom::array> requests = reader.Array(root, "requests", "")) {
    size_t i = 0;
    for (simdjson::dom::element r : *requests) {
      const std::string path = absl::StrCat("requests[", i++, "]");
      if (!r.is_object()) {
        reader.Fail("", path, "must be an object", r);
        break;
      }
      const std::optional<double> ttft = reader.Optional(r, "ttft_s", path, 0, kMaxSeconds);
      if (!reader.String(r, "error_kind", path).empty()) continue;  // failed: no TTFT to plot
      if (ttft) run.ttft_s.push_back(*ttft);
    }
  }
  if (!reader.status().ok()) return reader.status();
  return run;
}

absl::StatusOr<SavedRun> ReadResultsFile(const std::string& path) {
  absl::StatusOr<std::string> text = workload::ReadFileText(path, "results file");
  if (!text.ok()) return text.status();
  return ParseResultsJson(*text, path);
}

}  // namespace warmroute::loadgen
