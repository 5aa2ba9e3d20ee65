#include "core/routing/policies/dynamo_kv.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/routing/policies/policy_util.h"

namespace warmroute::routing {

Decision DynamoKvPolicy::Route(const RoutingRequest& request, RoutingContext& ctx) {
  const double block = request.key.tokens_per_block > 0 ? request.key.tokens_per_block : 16;
  const double prompt = static_cast<double>(PromptTokens(request));
  std::vector<double> cost(ctx.fleet.size(), 0);
  double min_cost = std::numeric_limits<double>::infinity();
  double max_cost = -std::numeric_limits<double>::infinity();
  int32_t best_blocks = 0;
  for (BackendId b : ctx.candidates) {
    const BackendState& state = ctx.fleet.backend(b);
    const double cached =
        static_cast<double>(PredictedCachedTokens(request, ctx.matched_blocks[b]));
    const double prefill_blocks =
        (prompt - cached) / block + static_cast<double>(state.outstanding_prefill_tokens) / block;
    const double decode_blocks =
        static_cast<double>(state.decode_context_tokens) / block + prompt / block;
    cost[b] = options_.overlap_score_weight * prefill_blocks + decode_blocks;
    min_cost = std::min(min_cost, cost[b]);
    max_cost = std::max(max_cost, cost[b]);
    best_blocks = std::max(best_blocks, ctx.matched_blocks[b]);
  }
  auto cost_of = [&](BackendId b) { return cost[b]; };

  BackendId chosen;
  if (options_.temperature > 0 && max_cost > min_cost) {
    std::vector<double> weights;
    weights.reserve(ctx.candidates.size());
    double total = 0;
    for (BackendId b : ctx.candidates) {
      const double normalized = (cost[b] - min_cost) / (max_cost - min_cost);
      weights.push_back(std::exp(-normalized / options_.temperature));
      total += weights.back();
    }
    double u = ctx.rng.Uniform() * total;
    size_t i = 0;
    while (i + 1 < weights.size() && u >= weights[i]) u -= weights[i++];
    chosen = ctx.candidates[i];
  } else {
    // Lowest cost; among equal costs the smaller cached set, then a random one.
    std::vector<BackendId> tied;
    for (BackendId b : ctx.candidates) {
      if (cost[b] <= min_cost + 1e-9 * std::max(1.0, std::abs(min_cost))) tied.push_back(b);
    }
    chosen = ArgMin(
        tied, [&](BackendId b) { return static_cast<double>(ctx.index.entries(b)); }, &ctx.rng);
  }
  return DecideByCost(request, ctx, chosen, best_blocks, cost_of);
}

absl::StatusOr<std::unique_ptr<Policy>> MakeDynamoKvPolicy(ParamReader& params) {
  DynamoKvOptions options;
  options.overlap_score_weight = params.Get("overlap_score_weight", options.overlap_score_weight);
  options.temperature = params.Get("temperature", options.temperature);
  params.Require(options.overlap_score_weight >= 0, "overlap_score_weight", "must be non-negative");
  params.Require(options.temperature >= 0, "temperature", "must be non-negative");
  absl::Status status = params.status();
  if (!status.ok()) return status;
  return std::make_unique<DynamoKvPolicy>(options);
}

}  // namespace warmroute::routing
