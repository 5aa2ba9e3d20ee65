#include "emulator/replica_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace warmroute::emulator {
namespace {

// Histogram buckets exactly as vLLM V1 declares them (vllm/v1/metrics/loggers.py,
// PrometheusStatLogger): histogram_time_to_first_token, histogram_inter_token_latency (the same
// boundaries as the deprecated time_per_output_token) and request_latency_buckets (used by
// e2e_request_latency_seconds and the queue/prefill/decode phase histograms).
const prometheus::Histogram::BucketBoundaries& TimeToFirstTokenBuckets() {
  static const auto* buckets = new prometheus::Histogram::BucketBoundaries{
      0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
      1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
  return *buckets;
}

const prometheus::Histogram::BucketBoundaries& InterTokenLatencyBuckets() {
  static const auto* buckets = new prometheus::Histogram::BucketBoundaries{
      0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
      0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
  return *buckets;
}

const prometheus::Histogram::BucketBoundaries& RequestLatencyBuckets() {
  static const auto* buckets = new prometheus::Histogram::BucketBoundaries{
      0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
      30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
  return *buckets;
}

// A Prometheus counter that follows a cumulative value owned by someone else (the engine).
// Prometheus counters only go up: a value below the last one seen means the source restarted
// from zero, so everything it counted since is new and the counter advances by the whole value.
class CumulativeCounter {
 public:
  explicit CumulativeCounter(prometheus::Counter& counter) : counter_(&counter) {}

  // REQUIRES: the caller serializes calls (ReplicaMetrics holds a mutex).
  void AdvanceTo(int64_t cumulative) {
    if (cumulative < 0) return;  // not a count: ignore rather than corrupt the counter
    const int64_t delta = cumulative >= last_ ? cumulative - last_ : cumulative;
    last_ = cumulative;
    if (delta > 0) counter_->Increment(static_cast<double>(delta));
  }

 private:
  prometheus::Counter* counter_;
  int64_t last_ = 0;
};

}  // namespace

struct ReplicaMetrics::State {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();

  // Owned by `registry`.
  prometheus::Gauge* num_requests_running = nullptr;
  prometheus::Gauge* num_requests_waiting = nullptr;
  prometheus::Gauge* kv_cache_usage_perc = nullptr;
  prometheus::Histogram* time_to_first_token = nullptr;
  prometheus::Histogram* inter_token_latency = nullptr;
  prometheus::Histogram* e2e_request_latency = nullptr;
  prometheus::Histogram* intended_time_to_first_token = nullptr;

  std::mutex mu;  // guards the last-seen values inside the counters below
  std::optional<CumulativeCounter> prefix_cache_queries;
  std::optional<CumulativeCounter> prefix_cache_hits;
  std::optional<CumulativeCounter> prompt_tokens;
  std::optional<CumulativeCounter> generation_tokens;
  std::optional<CumulativeCounter> num_preemptions;
};

namespace {

// prometheus-cpp prints a counter family's name as given, so the family carries the `_total`
// suffix: the exposition then reads `# TYPE vllm:prompt_tokens_total counter` followed by
// `vllm:prompt_tokens_total{...}`, as vLLM's prometheus_client output does.
prometheus::Counter& AddCounter(prometheus::Registry& registry, const std::string& name,
                                const std::string& help, const prometheus::Labels& labels) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry).Add(labels);
}

prometheus::Gauge& AddGauge(prometheus::Registry& registry, const std::string& name,
                            const std::string& help, const prometheus::Labels& labels) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry).Add(labels);
}

prometheus::Histogram& AddHistogram(prometheus::Registry& registry, const std::string& name,
                                    const std::string& help, const prometheus::Labels& labels,
                                    const prometheus::Histogram::BucketBoundaries& buckets) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(registry).Add(labels, buckets);
}

}  // namespace

ReplicaMetrics::ReplicaMetrics(std::string_view model_name, int engine_index,
                               const engine::EngineConfig& config)
    : state_(std::make_unique<State>()) {
  prometheus::Registry& registry = *state_->registry;
  const std::string engine = std::to_string(engine_index);
  const prometheus::Labels labels = {{"model_name", std::string(model_name)}, {"engine", engine}};

  state_->num_requests_running =
      &AddGauge(registry, "vllm:num_requests_running",
                "Number of requests in model execution batches.", labels);
  state_->num_requests_waiting = &AddGauge(registry, "vllm:num_requests_waiting",
                                           "Number of requests waiting to be processed.", labels);
  state_->kv_cache_usage_perc = &AddGauge(registry, "vllm:kv_cache_usage_perc",
                                          "KV-cache usage. 1 means 100 percent usage.", labels);

  state_->prefix_cache_queries.emplace(
      AddCounter(registry, "vllm:prefix_cache_queries_total",
                 "Prefix cache queries, in terms of number of queried tokens.", labels));
  state_->prefix_cache_hits.emplace(
      AddCounter(registry, "vllm:prefix_cache_hits_total",
                 "Prefix cache hits, in terms of number of cached tokens.", labels));
  state_->prompt_tokens.emplace(AddCounter(registry, "vllm:prompt_tokens_total",
                                           "Number of prefill tokens processed.", labels));
  state_->generation_tokens.emplace(AddCounter(registry, "vllm:generation_tokens_total",
                                               "Number of generation tokens processed.", labels));
  state_->num_preemptions.emplace(AddCounter(registry, "vllm:num_preemptions_total",
                                             "Cumulative number of preemption from the engine.",
                                             labels));

  state_->time_to_first_token = &AddHistogram(registry, "vllm:time_to_first_token_seconds",
                                              "Histogram of time to first token in seconds.",
                                              labels, TimeToFirstTokenBuckets());
  state_->inter_token_latency = &AddHistogram(registry, "vllm:inter_token_latency_seconds",
                                              "Histogram of inter-token latency in seconds.",
                                              labels, InterTokenLatencyBuckets());
  state_->e2e_request_latency = &AddHistogram(registry, "vllm:e2e_request_latency_seconds",
                                              "Histogram of e2e request latency in seconds.",
                                              labels, RequestLatencyBuckets());
  // Not a vLLM metric: what the timing model intends, to measure the emulator's own accuracy
  // against vllm:time_to_first_token_seconds (bench/emulator_accuracy.py).
  state_->intended_time_to_first_token = &AddHistogram(
      registry, "warmroute_emulator_intended_ttft_seconds",
      "Time to first token the timing model intends: the ideal end of the step that produced "
      "the first token minus the arrival, in emulated seconds.",
      labels, TimeToFirstTokenBuckets());

  // vLLM's info gauge: CacheConfig.metrics_info() (every field as Python's str()) plus "engine",
  // and no model_name. We expose the fields our engine model has; booleans read "True"/"False"
  // and cache_dtype "auto" as in vLLM.
  const prometheus::Labels cache_labels = {
      {"block_size", std::to_string(config.block_size)},
      {"cache_dtype", "auto"},
      {"enable_prefix_caching", config.enable_prefix_caching ? "True" : "False"},
      {"num_gpu_blocks", std::to_string(config.num_gpu_blocks)},
      {"engine", engine},
  };
  AddGauge(registry, "vllm:cache_config_info", "Information of the LLMEngine CacheConfig",
           cache_labels)
      .Set(1);
}

ReplicaMetrics::~ReplicaMetrics() = default;

void ReplicaMetrics::Update(const engine::EngineStats& stats) {
  state_->num_requests_running->Set(static_cast<double>(stats.num_running));
  state_->num_requests_waiting->Set(static_cast<double>(stats.num_waiting));
  state_->kv_cache_usage_perc->Set(stats.kv_cache_usage);

  std::lock_guard<std::mutex> lock(state_->mu);
  state_->prefix_cache_queries->AdvanceTo(stats.prefix_cache_queries);
  state_->prefix_cache_hits->AdvanceTo(stats.prefix_cache_hits);
  state_->prompt_tokens->AdvanceTo(stats.prompt_tokens);
  state_->generation_tokens->AdvanceTo(stats.generation_tokens);
  state_->num_preemptions->AdvanceTo(stats.num_preemptions);
}

void ReplicaMetrics::ObserveTimeToFirstToken(double seconds) {
  state_->time_to_first_token->Observe(seconds);
}

void ReplicaMetrics::ObserveIntendedTimeToFirstToken(double seconds) {
  state_->intended_time_to_first_token->Observe(seconds);
}

void ReplicaMetrics::ObserveInterTokenLatency(double seconds) {
  state_->inter_token_latency->Observe(seconds);
}

void ReplicaMetrics::ObserveEndToEndLatency(double seconds) {
  state_->e2e_request_latency->Observe(seconds);
}

std::string ReplicaMetrics::Serialize() const {
  return prometheus::TextSerializer().Serialize(state_->registry->Collect());
}

std::string ReplicaMetrics::SerializeAll(std::span<const ReplicaMetrics* const> engines) {
  std::vector<prometheus::MetricFamily> families;
  absl::flat_hash_map<std::string, size_t> index;  // family name -> position in `families`
  for (const ReplicaMetrics* engine : engines) {
    for (prometheus::MetricFamily& family : engine->state_->registry->Collect()) {
      auto [it, inserted] = index.try_emplace(family.name, families.size());
      if (inserted) {
        families.push_back(std::move(family));
      } else {
        std::vector<prometheus::ClientMetric>& metrics = families[it->second].metric;
        metrics.insert(metrics.end(), std::make_move_iterator(family.metric.begin()),
                       std::make_move_iterator(family.metric.end()));
      }
    }
  }
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace warmroute::emulator
