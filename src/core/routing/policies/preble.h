// preble: the E2 ("exploitation + exploration") global scheduler of Preble (Srivatsa et al.,
// "Preble: Efficient Distributed Prompt Scheduling for LLM Serving", ICLR 2025,
// arXiv:2407.00023), reduced to its per-request placement rule.
//
// Rule. Let best = the longest match over the candidates, in predicted cached tokens, and
// missed = prompt - best.
//   Exploit, if best > missed (the cached part exceeds the part to compute, i.e. more than half
//     of the prompt is cached): the backend holding the best match; among several, the one with
//     the lowest load cost below.
//   Explore, otherwise: the backend with the lowest load cost
//     cost(b) = outstanding_prefill_tokens(b) + decode_weight * decode_context_tokens(b)
//               + (prompt - predicted_cached(b))
//   (ties: the lowest id). Preble's cost is L + M + P in time: L = the prefill and decode time of
//   the requests it ran in a recent window (3 minutes), M = the cost of evicting cached prefixes
//   to make room, P = this request's prefill time on that GPU. Here L is approximated by the
//   router's own live account of the work it sent there (prefill not yet done plus the contexts
//   of running decodes, in tokens), M is left out (no eviction model in the router's view), and
//   P is the request's uncached tokens there; all in prefill-token units.
// Not reproduced: Preble's post-assignment rebalancing, its prefix autoscaling of hot prompts,
// and its fair local waiting queue (an engine-side feature).
//
// Parameters:
//   decode_weight  1.0  a token of running-decode context counts as a prefill token: Preble's
//                       window load counts each recent request's whole work, prompt and output,
//                       which decode_context_tokens (prompt + max_tokens per running decode)
//                       stands for
// Reasons: kCacheHit (exploit), kLeastLoad (explore). Scores: cost (tokens).
//
// Thread-safety: none (policy.h).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "core/routing/policies/param_reader.h"
#include "core/routing/policy.h"

namespace warmroute::routing {

struct PrebleOptions {
  double decode_weight = 1.0;
};

class PreblePolicy final : public Policy {
 public:
  explicit PreblePolicy(PrebleOptions options) : options_(options) {}
  std::string_view name() const override { return "preble"; }
  Decision Route(const RoutingRequest& request, RoutingContext& ctx) override;

 private:
  PrebleOptions options_;
};

absl::StatusOr<std::unique_ptr<Policy>> MakePreblePolicy(ParamReader& params);

}  // namespace warmroute::routing
