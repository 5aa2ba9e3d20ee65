#include "loadgen/engine_counters.h"

#include "net/prometheus_text.h"

namespace warmroute::loadgen {

absl::StatusOr<EngineCounters> ReadEngineCounters(std::string_view prometheus_text) {
  absl::StatusOr<std::vector<net::MetricSample>> samples =
      net::ParsePrometheusText(prometheus_text);
  if (!samples.ok()) return samples.status();
  EngineCounters c;
  bool found = false;
  bool have_success = false;
  double finished = 0;  // vllm:e2e_request_latency_seconds_count
  for (const net::MetricSample& s : *samples) {
    if (s.name == "vllm:prefix_cache_hits_total") {
      c.prefix_cache_hits += s.value;
    } else if (s.name == "vllm:prefix_cache_queries_total") {
      c.prefix_cache_queries += s.value;
    } else if (s.name == "vllm:request_success_total") {
      c.request_success += s.value;
      have_success = true;
    } else if (s.name == "vllm:e2e_request_latency_seconds_count") {
      finished += s.value;
    } else {
      continue;
    }
    found = true;
  }
  if (!have_success) c.request_success = finished;
  if (!found) {
    return absl::FailedPreconditionError(
        "no vllm:prefix_cache_hits_total, vllm:prefix_cache_queries_total, "
        "vllm:request_success_total or vllm:e2e_request_latency_seconds_count in the metrics "
        "(not a vLLM-compatible engine?)");
  }
  return c;
}

}  // namespace warmroute::loadgen
