// llmd_weighted: llm-d's default inference-scheduler profile (llm-d "inference scheduling" well-lit
// path; Gateway API Inference Extension endpoint picker): filter -> score -> pick, with three
// weighted scorers and the max-score picker.
//
// Rule: total(b) = prefix_weight * prefix(b) + queue_weight * queue(b) + kv_weight * kv(b),
// highest total wins (ties: a random one of them, as the max-score picker shuffles ties).
//   prefix(b) = matched blocks / blocks of the request's key   (prefix-cache-scorer: the
//               fraction of the prompt's blocks found on that endpoint; 0 for a key without
//               blocks)
//   queue(b)  = (max_q - q(b)) / (max_q - min_q), 1 when all are equal   (queue-scorer:
//               min-max normalised waiting queue, shorter is better), with q(b) the scraped
//               num_waiting when every candidate has been scraped, else the router's own
//               in_flight count (no metrics yet, e.g. the first scrape interval)
//   kv(b)     = 1 - kv_usage(b)   (kv-cache-utilization-scorer), kv_usage from the last scrape;
//               without one, the router's own estimate: decode_context_tokens / KV capacity
//               (0 when the capacity is unknown), capped at 1
// Scraped metrics are used as they are, with their age: llm-d's endpoint picker also scores on
// its last scrape.
//
// Parameters (llm-d's default EndpointPickerConfig: prefix-cache-scorer weight 3,
// kv-cache-utilization-scorer weight 2, queue-scorer weight 2):
//   prefix_weight  3
//   queue_weight   2
//   kv_weight      2
// Reasons: kCacheHit when the chosen backend holds the best non-empty match, else kLeastLoad.
// Scores: -total (lower is better).
//
// Thread-safety: none (policy.h).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "core/routing/policies/param_reader.h"
#include "core/routing/policy.h"

namespace warmroute::routing {

struct LlmdWeightedOptions {
  double prefix_weight = 3;
  double queue_weight = 2;
  double kv_weight = 2;
};

class LlmdWeightedPolicy final : public Policy {
 public:
  explicit LlmdWeightedPolicy(LlmdWeightedOptions options) : options_(options) {}
  std::string_view name() const override { return "llmd_weighted"; }
  Decision Route(const RoutingRequest& request, RoutingContext& ctx) override;

 private:
  LlmdWeightedOptions options_;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeLlmdWeightedPolicy(ParamReader& params);

}  // namespace warmroute::routing
