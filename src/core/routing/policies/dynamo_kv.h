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
// router's view has their uncached part only (in outstanding prefill). Overlaps come from the
// shared prefix index, keyed by the engine's 16-token blocks: in precise mode (`warmroute sim
// --prefix-mode precise`, or a gateway subscribed to KV events) it is fed by the engines' KV
// events, as Dynamo's KvIndexer is (Dynamo docs, "Router Design": cached blocks "maintained
// globally by the KvIndexer using a prefix tree built from worker-reported KV events"), plus the
// Router's speculative inserts at dispatch; in approximate mode by routing history and the closed
// loop on reported cached tokens only, which is Dynamo without KV events (its approximate
// indexer, which also predicts from its own routing decisions).
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
