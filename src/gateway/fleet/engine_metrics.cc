#include "gateway/fleet/engine_metrics.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <span>
#include <system_error>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "net/prometheus_text.h"

namespace warmroute::gateway {
namespace {

struct KindName {
  EngineKind kind;
  std::string_view name;
};

constexpr std::array<KindName, 5> kKinds = {{
    {EngineKind::kVllm, "vllm"},
    {EngineKind::kSglang, "sglang"},
    {EngineKind::kLlamaCpp, "llamacpp"},
    {EngineKind::kTrtLlm, "trtllm"},
    {EngineKind::kOpenAi, "openai"},
}};

// The metric names of one engine kind. `kv_usage` lists alternatives, newest name first.
struct LoadMetricNames {
  std::string_view running;
  std::string_view waiting;
  std::vector<std::string_view> kv_usage;
  bool kv_usage_required = true;
};

LoadMetricNames NamesOf(EngineKind kind) {
  switch (kind) {
    case EngineKind::kVllm:
      return {"vllm:num_requests_running",
              "vllm:num_requests_waiting",
              {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
              true};
    case EngineKind::kSglang:
      return {"sglang:num_running_reqs", "sglang:num_queue_reqs", {"sglang:token_usage"}, true};
    case EngineKind::kLlamaCpp:
      return {"llamacpp:requests_processing",
              "llamacpp:requests_deferred",
              {"llamacpp:kv_cache_usage_ratio"},
              false};
    case EngineKind::kTrtLlm:
    case EngineKind::kOpenAi:
      break;
  }
  return {};
}

std::string Join(std::span<const std::string_view> parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out.append(separator);
    out.append(parts[i]);
  }
  return out;
}

// Counts above this are not plausible from one server and could overflow sums.
constexpr double kMaxCount = 1099511627776.0;  // 2^40
// A KV capacity above this is not plausible from one server (a broken exporter): not used.
constexpr int64_t kMaxKvCapacityTokens = int64_t{1} << 40;
// Fractions within this of [0, 1] are rounding noise and are clamped.
constexpr double kFractionTolerance = 0.01;

// The samples named `name`. Empty if there are none.
std::vector<double> ValuesOf(std::span<const net::MetricSample> samples, std::string_view name) {
  std::vector<double> values;
  for (const net::MetricSample& sample : samples) {
    if (sample.name == name) values.push_back(sample.value);
  }
  return values;
}

absl::StatusOr<int64_t> SumCounts(std::span<const net::MetricSample> samples,
                                  std::string_view name) {
  const std::vector<double> values = ValuesOf(samples, name);
  if (values.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("metric ", std::string(name), " is missing from the engine's metrics"));
  }
  double sum = 0;
  for (double v : values) {
    if (!(v >= 0 && v <= kMaxCount)) {  // also rejects NaN
      return absl::InvalidArgumentError(
          absl::StrCat("metric ", std::string(name), " is not a count: ", v));
    }
    sum += v;
  }
  return static_cast<int64_t>(std::llround(sum));
}

// The mean of the first present name in `names`; nullopt if none is present.
absl::StatusOr<std::optional<double>> MeanFraction(std::span<const net::MetricSample> samples,
                                                   std::span<const std::string_view> names) {
  for (std::string_view name : names) {
    const std::vector<double> values = ValuesOf(samples, name);
    if (values.empty()) continue;
    double sum = 0;
    for (double v : values) {
      if (!(v >= -kFractionTolerance && v <= 1 + kFractionTolerance)) {
        return absl::InvalidArgumentError(
            absl::StrCat("metric ", std::string(name), " is not a fraction in [0, 1]: ", v));
      }
      sum += std::clamp(v, 0.0, 1.0);
    }
    return std::optional<double>(sum / static_cast<double>(values.size()));
  }
  return std::optional<double>();
}

std::optional<int64_t> PositiveIntLabel(const net::MetricSample& sample, std::string_view label) {
  const std::optional<std::string_view> text = net::FindLabel(sample, label);
  if (!text.has_value() || text->empty()) return std::nullopt;
  int64_t value = 0;
  const char* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, value);
  // Bounded so that the product cannot overflow (the sum is bounded apart).
  if (ec != std::errc() || ptr != end || value <= 0 || value > (int64_t{1} << 30)) {
    return std::nullopt;
  }
  return value;
}

// vLLM's KV capacity: Σ over vllm:cache_config_info samples of num_gpu_blocks x block_size;
// nullopt when there is none or any lacks a positive integer in either label.
std::optional<int64_t> VllmKvCapacityTokens(std::span<const net::MetricSample> samples) {
  std::optional<int64_t> total;
  for (const net::MetricSample& sample : samples) {
    if (sample.name != "vllm:cache_config_info") continue;
    const std::optional<int64_t> blocks = PositiveIntLabel(sample, "num_gpu_blocks");
    const std::optional<int64_t> block_size = PositiveIntLabel(sample, "block_size");
    if (!blocks.has_value() || !block_size.has_value()) return std::nullopt;
    const int64_t tokens = *blocks * *block_size;  // each at most 2^30: no overflow
    if (tokens > kMaxKvCapacityTokens - total.value_or(0)) return std::nullopt;
    total = total.value_or(0) + tokens;
  }
  return total;
}

// The whole reading of `samples` (ReadEngineMetrics without its cores).
absl::StatusOr<ScrapedEngineMetrics> ReadSamples(EngineKind kind,
                                                 std::span<const net::MetricSample> samples,
                                                 TimePoint now) {
  const LoadMetricNames names = NamesOf(kind);

  ScrapedEngineMetrics out;
  out.sample.scraped_at = now;
  absl::StatusOr<int64_t> running = SumCounts(samples, names.running);
  if (!running.ok()) return running.status();
  out.sample.num_running = *running;
  absl::StatusOr<int64_t> waiting = SumCounts(samples, names.waiting);
  if (!waiting.ok()) return waiting.status();
  out.sample.num_waiting = *waiting;

  absl::StatusOr<std::optional<double>> kv_usage = MeanFraction(samples, names.kv_usage);
  if (!kv_usage.ok()) return kv_usage.status();
  if (kv_usage->has_value()) {
    out.sample.kv_usage = **kv_usage;
  } else if (names.kv_usage_required) {
    return absl::FailedPreconditionError(absl::StrCat("metric ", Join(names.kv_usage, " (or "),
                                                      names.kv_usage.size() > 1 ? ")" : "",
                                                      " is missing from the engine's metrics"));
  }

  if (kind == EngineKind::kVllm) out.kv_capacity_tokens = VllmKvCapacityTokens(samples);
  return out;
}

// Orders `engine` label values numerically when both are numbers, numbers first.
bool EngineBefore(const std::string& a, const std::string& b) {
  int64_t x = 0, y = 0;
  const bool a_num = absl::SimpleAtoi(a, &x), b_num = absl::SimpleAtoi(b, &y);
  if (a_num != b_num) return a_num;
  return a_num ? x < y : a < b;
}

// The per-core readings (see ScrapedEngineMetrics::cores).
std::vector<EngineCoreMetrics> ReadCores(EngineKind kind,
                                         std::span<const net::MetricSample> samples,
                                         TimePoint now) {
  const std::string_view running = NamesOf(kind).running;
  std::vector<std::string> engines;
  for (const net::MetricSample& sample : samples) {
    if (sample.name != running) continue;
    const std::optional<std::string_view> engine = net::FindLabel(sample, "engine");
    if (!engine.has_value()) return {};
    if (std::find(engines.begin(), engines.end(), *engine) == engines.end()) {
      engines.emplace_back(*engine);
    }
  }
  std::sort(engines.begin(), engines.end(), EngineBefore);
  std::vector<EngineCoreMetrics> cores;
  std::vector<net::MetricSample> own;
  for (const std::string& engine : engines) {
    own.clear();
    for (const net::MetricSample& sample : samples) {
      if (net::FindLabel(sample, "engine") == std::optional<std::string_view>(engine)) {
        own.push_back(sample);
      }
    }
    absl::StatusOr<ScrapedEngineMetrics> core = ReadSamples(kind, own, now);
    if (!core.ok()) return {};
    cores.push_back(
        {.engine = engine, .sample = core->sample, .kv_capacity_tokens = core->kv_capacity_tokens});
  }
  return cores;
}

}  // namespace

absl::StatusOr<EngineKind> ParseEngineKind(std::string_view name) {
  for (const KindName& k : kKinds) {
    if (k.name == name) return k.kind;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown engine kind '", std::string(name),
                                                 "' (known: ", EngineKindNames(), ")"));
}

std::string_view EngineKindName(EngineKind kind) {
  for (const KindName& k : kKinds) {
    if (k.kind == kind) return k.name;
  }
  return "unknown";
}

std::string EngineKindNames() {
  std::vector<std::string_view> names;
  for (const KindName& k : kKinds) names.push_back(k.name);
  return Join(names, ", ");
}

bool ExposesLoadMetrics(EngineKind kind) {
  return kind == EngineKind::kVllm || kind == EngineKind::kSglang || kind == EngineKind::kLlamaCpp;
}

absl::StatusOr<ScrapedEngineMetrics> ReadEngineMetrics(EngineKind kind,
                                                       std::string_view prometheus_text,
                                                       TimePoint now) {
  if (!ExposesLoadMetrics(kind)) {
    return absl::NotFoundError(absl::StrCat("engine kind ", std::string(EngineKindName(kind)),
                                            " exposes no load metrics"));
  }
  absl::StatusOr<std::vector<net::MetricSample>> samples =
      net::ParsePrometheusText(prometheus_text);
  if (!samples.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid Prometheus text from the engine: ", samples.status().message()));
  }
  absl::StatusOr<ScrapedEngineMetrics> out = ReadSamples(kind, *samples, now);
  if (out.ok()) out->cores = ReadCores(kind, *samples, now);
  return out;
}

}  // namespace warmroute::gateway
