// dynamo_kv: NVIDIA Dynamo's KV router cost function (Dynamo docs, "KV Router" / "Routing
// Concepts": cost = overlap_score_weight * prefill_blocks + decode_blocks, lowest cost wins).
//
// Rule, for each candidate b, in KV blocks of key.tokens_per_block tokens (Dynamo's
// --kv-cache-block-size, the engine's block: 16 tokens):
//   prefill_blocks(b) = (prompt - predicted_cached(b)) / block   the request's potential new
//                       + outstanding_prefill_tokens(b) / block  prefill, plus the prefill already
//                                                                 routed there (Dynamo counts the
//                                                                 worker's active prefill tokens)
//   decode_blocks(b)  = decode_context_tokens(b) / block          active blocks of its running
//                       + prompt / block                          decodes, plus the request's own
//                                                                 blocks ("potential active
//                                                                 blocks"; the same on every b)
//   cost(b) = overlap_score_weight * prefill_blocks(b) + decode_blocks(b)
// With temperature 0 (Dynamo's default --router-temperature) the lowest cost wins; ties go to the
// backend with the smaller cached set (fewer prefix-index entries: Dynamo prefers the smaller
// radix tree), then to a random one. With temperature > 0 the choice is sampled from
// softmax(-normalized cost / temperature), costs normalized to [0, 1] by their range (Dynamo's
// softmax sampling of cost logits).
// Approximations: Dynamo's active blocks also count the prompts of requests still in prefill; the
// router's view has their uncached part only (in outstanding prefill). Dynamo learns overlaps from
// the engines' KV events; here from the shared prefix index (routing history and closed loop).
//
// Parameters:
//   overlap_score_weight  1.0  Dynamo's --kv-overlap-score-weight default: one prefill block
//                              costs as much as one active decode block
//   temperature           0.0  Dynamo's --router-temperature default: deterministic argmin
// Reasons: kCacheHit when the chosen backend holds the best non-empty match, else kLeastLoad.
// Scores: cost (blocks).
//
// Thread-safety: none (policy.h).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "core/routing/policies/param_reader.h"
#include "core/routing/policy.h"

namespace warmroute::routing {

struct DynamoKvOptions {
  double overlap_score_weight = 1.0;
  double temperature = 0.0;
};

class DynamoKvPolicy final : public Policy {
 public:
  explicit DynamoKvPolicy(DynamoKvOptions options) : options_(options) {}
  std::string_view name() const override { return "dynamo_kv"; }
  Decision Route(const RoutingRequest& request, RoutingContext& ctx) override;

 private:
  DynamoKvOptions options_;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeDynamoKvPolicy(ParamReader& params);

}  // namespace warmroute::routing
