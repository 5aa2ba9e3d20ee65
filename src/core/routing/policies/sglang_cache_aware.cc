#include "core/routing/policies/sglang_cache_aware.h"

#include <algorithm>
#include <limits>

#include "core/routing/policies/policy_util.h"

namespace warmroute::routing {

Decision SglangCacheAwarePolicy::Route(const RoutingRequest& request, RoutingContext& ctx) {
  auto load = [&](BackendId b) { return static_cast<double>(ctx.fleet.backend(b).in_flight); };
  double max_load = 0;
  double min_load = std::numeric_limits<double>::infinity();
  for (BackendId b : ctx.candidates) {
    max_load = std::max(max_load, load(b));
    min_load = std::min(min_load, load(b));
  }
  const bool imbalanced = max_load - min_load > options_.balance_abs_threshold &&
                          max_load > options_.balance_rel_threshold * min_load;

  BackendId chosen;
  Reason reason = Reason::kLeastLoad;
  if (imbalanced) {
    chosen = ArgMin(ctx.candidates, load, nullptr);
  } else {
    int32_t best_blocks = 0;
    for (BackendId b : ctx.candidates) best_blocks = std::max(best_blocks, ctx.matched_blocks[b]);
    const int64_t prompt = PromptTokens(request);
    const double match_rate = prompt > 0
                                  ? static_cast<double>(best_blocks) *
                                        request.key.tokens_per_block / static_cast<double>(prompt)
                                  : 0.0;
    if (best_blocks > 0 && match_rate > options_.cache_threshold) {
      chosen = ArgMin(
          ctx.candidates,
          [&](BackendId b) {
            return ctx.matched_blocks[b] == best_blocks ? load(b)
                                                        : std::numeric_limits<double>::infinity();
          },
          nullptr);
      reason = Reason::kCacheHit;
    } else {
      chosen = ArgMin(
          ctx.candidates, [&](BackendId b) { return static_cast<double>(ctx.index.entries(b)); },
          nullptr);
    }
  }
  Decision decision = DecideFor(request, ctx, chosen, reason);
  decision.alternates = RankedAlternates(ctx.candidates, chosen, load);
  decision.scores = ScoreAll(ctx, load);
  return decision;
}

absl::StatusOr<std::unique_ptr<Policy>> MakeSglangCacheAwarePolicy(ParamReader& params) {
  SglangCacheAwareOptions options;
  options.cache_threshold = params.Get("cache_threshold", options.cache_threshold);
  options.balance_abs_threshold =
      params.Get("balance_abs_threshold", options.balance_abs_threshold);
  options.balance_rel_threshold =
      params.Get("balance_rel_threshold", options.balance_rel_threshold);
  params.Require(options.cache_threshold >= 0 && options.cache_threshold <= 1, "cache_threshold",
                 "must be in [0, 1]");
  params.Require(options.balance_abs_threshold >= 0, "balance_abs_threshold",
                 "must be non-negative");
  params.Require(options.balance_rel_threshold >= 1, "balance_rel_threshold", "must be at least 1");
  absl::Status status = params.status();
  if (!status.ok()) return status;
  return std::make_unique<SglangCacheAwarePolicy>(options);
}

}  // namespace warmroute::routing
