// The raw outcome of one simulated run — one policy on the fleet, or the pooled-cache bound —
// from which reports (report.h) derive every figure: per-request latency samples, token counts,
// per-replica totals and per-replica load series.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/routing/prewarm_planner.h"
#include "core/routing/router.h"
#include "core/stats/samples.h"
#include "sim/membership.h"

namespace warmroute::sim {

struct ReplicaTotals {
  int64_t requests = 0;               // requests dispatched to this replica
  int64_t requests_after_change = 0;  // of those, dispatched at or after the membership change
  int64_t prompt_tokens = 0;          // engine prompt tokens of its finished requests
  int64_t cached_tokens = 0;          // of those, served from its prefix cache (engine-reported)
  int64_t prefill_tokens = 0;         // prompt tokens it actually computed (incl. recomputation)
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

// The engine-reported hit rate over time. Requests are bucketed by their arrival at the gateway
// (where the routing decision is made) into windows of window_s seconds: window k covers
// [origin_s + k window_s, origin_s + (k + 1) window_s). origin_s is in [0, window_s): the
// windows are aligned so that a membership change falls on a window boundary (0 without one);
// arrivals before origin_s are not counted. Only windows that end by the last arrival are kept, so
// that none is a partial one. A window's figures are over its finished requests.
struct HitRateSeries {
  double window_s = 0;
  double origin_s = 0;
  std::vector<int64_t> requests;
  std::vector<int64_t> prompt_tokens;
  std::vector<int64_t> cached_tokens;

  size_t size() const { return prompt_tokens.size(); }
  double start_s(size_t k) const { return origin_s + window_s * static_cast<double>(k); }
  // Σ cached / Σ prompt tokens of window k; NaN for a window without prompt tokens.
  double hit_rate(size_t k) const {
    return prompt_tokens[k] > 0
               ? static_cast<double>(cached_tokens[k]) / static_cast<double>(prompt_tokens[k])
               : std::numeric_limits<double>::quiet_NaN();
  }
};

// The span before and after a membership change over which RunResult's TTFTs around the change
// are taken (and DipOptions::after_s by default): what clients see in the minute after it.
inline constexpr Duration kChangeSpan = std::chrono::seconds(60);

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
  HitRateSeries hit_series;

  // The membership change applied during the run (SimOptions::membership), if any.
  std::optional<MembershipChange> membership;
  // With a membership change at C: the TTFTs of the client requests that arrived in
  // [C - kChangeSpan, C) and in [C, C + kChangeSpan).
  stats::Samples ttft_before_change_s;
  stats::Samples ttft_after_change_s;

  // Prewarm and handoff requests (SimOptions::prewarm), summed over the gateways. Real engine
  // work, but no client traffic: counted here only, not in the figures above.
  struct PrewarmTotals {
    bool enabled = false;
    int64_t finished = 0;
    int64_t join = 0;     // of which planned on a join
    int64_t handoff = 0;  // of which planned on a removal
    int64_t failed = 0;
    int64_t prompt_tokens = 0;  // engine-reported
    int64_t cached_tokens = 0;
    routing::PrewarmCounters planner;  // planned, sent, dropped
  } prewarm;

  // Fleet runs: the router's decisions by reason and its predicted vs reported cached tokens.
  std::map<std::string, int64_t> reasons;
  routing::RouterStats router;

  // Fleet runs: the index accuracy. Over finished requests: Σ |predicted − engine-reported
  // cached tokens| / engine prompt tokens, the prediction being the routing decision's
  // (Decision::predicted_cached_tokens: the chosen backend's matched depth).
  std::string prefix_mode = "approximate";  // SimOptions::PrefixMode
  double index_error_sum = 0;
  int64_t index_error_requests = 0;
  double index_error() const {
    return index_error_requests > 0 ? index_error_sum / static_cast<double>(index_error_requests)
                                    : std::numeric_limits<double>::quiet_NaN();
  }
  // Precise mode: the KV-event messages and what the router's feeds made of them (summed over
  // the replicas' kv_events::BackendEventFeed counters).
  struct KvEventTotals {
    int64_t published = 0;  // messages the engines published (one per step with events)
    int64_t lost = 0;       // of which never delivered live (SimOptions::event_loss)
    int64_t applied = 0;    // applied by the feeds, live or replayed
    int64_t replayed = 0;   // of which from a replay
    int64_t missed = 0;     // sequence numbers lost for good
    int64_t replays_requested = 0;
    int64_t rebuilds = 0;        // slices cleared and rebuilt after a loss
    int64_t routed_uncertain = 0;  // requests routed to a backend whose stream was uncertain
    // First-block runs of stored blocks no domain could be found for (not indexed), and those
    // attributed by domains sent to other backends (another gateway's dispatch;
    // kv_events::WriterCounters).
    int64_t unattributed_blocks = 0;
    int64_t fleet_attributed_blocks = 0;
  } kv_events;

  // Placement gossip between the gateways (SimOptions::gossip), summed over them.
  struct GossipTotals {
    bool enabled = false;
    int64_t messages = 0;    // sent: one per receiver
    int64_t bytes = 0;       // of the messages sent
    int64_t lost = 0;        // of which never delivered (SimOptions::Gossip::loss)
    int64_t placements = 0;  // applied by receivers
  } gossip;

  // Requests routed by each gateway (SimOptions::gateways).
  std::vector<int64_t> gateway_requests;

  // Pooled run only: the infinite-cache bound over the same stream (infinite_cache_bound.h).
  int64_t infinite_prompt_tokens = 0;
  int64_t infinite_hit_tokens = 0;
};

}  // namespace warmroute::sim
