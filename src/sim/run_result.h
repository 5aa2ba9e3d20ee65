// The raw outcome of one simulated run — one policy on the fleet, or the pooled-cache bound —
// from which reports (report.h) derive every figure: per-request latency samples, token counts,
// per-replica totals and per-replica load series.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/routing/router.h"
#include "core/stats/samples.h"

namespace warmroute::sim {

struct ReplicaTotals {
  int64_t requests = 0;        // requests dispatched to this replica
  int64_t prompt_tokens = 0;   // engine prompt tokens of its finished requests
  int64_t cached_tokens = 0;   // of those, served from its prefix cache (engine-reported)
  int64_t prefill_tokens = 0;  // prompt tokens it actually computed (incl. recomputation)
  int64_t generated_tokens = 0;
  int64_t preemptions = 0;
  int64_t steps = 0;
  double busy_s = 0;  // Σ step durations
};

// Per-replica load sampled every SimOptions::series_interval (t = k * interval, k = 1, 2, ...).
struct LoadSeries {
  double interval_s = 0;
  // queue[r][k]: requests in replica r's engine (running + waiting) at sample k.
  std::vector<std::vector<float>> queue;
  // prefill_tps[r][k]: prompt tokens replica r computed per second over interval k.
  std::vector<std::vector<float>> prefill_tps;
};

struct RunResult {
  std::string name;  // the policy, or "pooled-cache bound"

  int64_t arrived = 0;
  int64_t finished = 0;
  int64_t failed = 0;  // rejected by the router or the engine

  // Over finished requests, engine-reported (usage): prompt and cached prompt tokens.
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t generated_tokens = 0;

  stats::Samples ttft_s;  // first token seen by the gateway - arrival at the gateway
  stats::Samples e2e_s;   // last token seen by the gateway - arrival at the gateway

  double first_arrival_s = 0;
  double last_finish_s = 0;

  std::vector<ReplicaTotals> replicas;
  LoadSeries series;

  // Fleet runs: the router's decisions by reason and its predicted vs reported cached tokens.
  std::map<std::string, int64_t> reasons;
  routing::RouterStats router;

  // Pooled run only: the infinite-cache bound over the same stream (infinite_cache_bound.h).
  int64_t infinite_prompt_tokens = 0;
  int64_t infinite_hit_tokens = 0;
};

}  // namespace warmroute::sim
