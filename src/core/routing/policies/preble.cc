#include "core/routing/policies/preble.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "core/routing/policies/policy_util.h"

namespace warmroute::routing {

Decision PreblePolicy::Route(const RoutingRequest& request, RoutingContext& ctx) {
  const int64_t prompt = PromptTokens(request);
  std::vector<double> cost(ctx.fleet.size(), 0);
  int64_t best = 0;
  for (BackendId b : ctx.candidates) {
    const BackendState& state = ctx.fleet.backend(b);
    const int64_t cached = PredictedCachedTokens(request, ctx.matched_blocks[b]);
    best = std::max(best, cached);
    cost[b] = static_cast<double>(state.outstanding_prefill_tokens) +
              options_.decode_weight * static_cast<double>(state.decode_context_tokens) +
              static_cast<double>(prompt - cached);
  }
  auto cost_of = [&](BackendId b) { return cost[b]; };
  const bool exploit = best > 0 && best > prompt - best;
  BackendId chosen;
  if (exploit) {
    chosen = ArgMin(
        ctx.candidates,
        [&](BackendId b) {
          return PredictedCachedTokens(request, ctx.matched_blocks[b]) == best
                     ? cost[b]
                     : std::numeric_limits<double>::infinity();
        },
        nullptr);
  } else {
    chosen = ArgMin(ctx.candidates, cost_of, nullptr);
  }
  Decision decision =
      DecideFor(request, ctx, chosen, exploit ? Reason::kCacheHit : Reason::kLeastLoad);
  decision.alternates = RankedAlternates(ctx.candidates, chosen, cost_of);
  decision.scores = ScoreAll(ctx, cost_of);
  return decision;
}

absl::StatusOr<std::unique_ptr<Policy>> MakePreblePolicy(ParamReader& params) {
  PrebleOptions options;
  options.decode_weight = params.Get("decode_weight", options.decode_weight);
  params.Require(options.decode_weight >= 0, "decode_weight", "must be non-negative");
  absl::Status status = params.status();
  if (!status.ok()) return status;
  return std::make_unique<PreblePolicy>(options);
}

}  // namespace warmroute::routing
