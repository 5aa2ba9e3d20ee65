// Prometheus metrics of one emulated replica, with vLLM V1's names, labels (model_name, engine)
// and histogram buckets, so that dashboards, scrapers and the gateway read it like a real vLLM
// server. Backed by a prometheus-cpp registry (core only) and served by our own listener.
//
//   vllm:num_requests_running / vllm:num_requests_waiting / vllm:kv_cache_usage_perc   gauges
//   vllm:prefix_cache_queries_total / vllm:prefix_cache_hits_total (tokens)            counters
//   vllm:prompt_tokens_total / vllm:generation_tokens_total / vllm:num_preemptions_total
//   vllm:time_to_first_token_seconds / vllm:inter_token_latency_seconds /
//   vllm:e2e_request_latency_seconds                                                   histograms
//   vllm:cache_config_info{block_size, num_gpu_blocks, ...} = 1                        info gauge
// and one metric of the emulator's own (not vLLM's), to measure its timing accuracy:
//   warmroute_emulator_intended_ttft_seconds: the TTFT the timing model intends    histogram
//
// Usage:
//   ReplicaMetrics metrics("llama", /*engine_index=*/0, core.config());
//   metrics.Update(core.Stats());          // after every step
//   metrics.ObserveTimeToFirstToken(0.12);
//   std::string text = metrics.Serialize(); // Prometheus text format 0.0.4
//
// Thread-safety: all methods may be called from any thread (prometheus-cpp metrics are atomic).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/engine/engine_core.h"

namespace warmroute::emulator {

class ReplicaMetrics {
 public:
  ReplicaMetrics(std::string_view model_name, int engine_index, const engine::EngineConfig& config);
  ~ReplicaMetrics();
  ReplicaMetrics(const ReplicaMetrics&) = delete;
  ReplicaMetrics& operator=(const ReplicaMetrics&) = delete;

  // Sets the gauges and advances the counters to the engine's cumulative values. A value below
  // the last one seen means the engine restarted from zero: the counter advances by the whole
  // new value (Prometheus counters never go down).
  void Update(const engine::EngineStats& stats);
  void ObserveTimeToFirstToken(double seconds);
  void ObserveIntendedTimeToFirstToken(double seconds);
  void ObserveInterTokenLatency(double seconds);
  void ObserveEndToEndLatency(double seconds);

  // The Prometheus text exposition of every metric.
  std::string Serialize() const;

  // The metrics of several engine cores (the data-parallel ranks behind one API, each with its
  // own `engine` label) in one exposition, as vLLM serves them: each metric's HELP and TYPE
  // once, then every engine's series, engines in the given order. One engine: Serialize().
  static std::string SerializeAll(std::span<const ReplicaMetrics* const> engines);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace warmroute::emulator
