// The counters `warmroute bench --engine-metrics` reads from an engine's Prometheus /metrics
// (vLLM V1 names; our emulator serves the same), each summed over its label sets:
//   vllm:prefix_cache_hits_total     prompt tokens served from the prefix cache
//   vllm:prefix_cache_queries_total  prompt tokens looked up in the prefix cache
//   vllm:request_success_total       finished requests (all finished_reason labels); when an
//                                    engine lacks it (our emulator), the finished-request count
//                                    vllm:e2e_request_latency_seconds_count instead
// A run's engine hit rate is Δhits / Δqueries between two scrapes.
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "loadgen/bench_result.h"

namespace warmroute::loadgen {

// InvalidArgument when `prometheus_text` is not exposition text; FailedPrecondition when it has
// none of these counters (not a vLLM-compatible engine).
absl::StatusOr<EngineCounters> ReadEngineCounters(std::string_view prometheus_text);

}  // namespace warmroute::loadgen
