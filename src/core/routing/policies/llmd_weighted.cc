#include "core/routing/policies/llmd_weighted.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "core/routing/policies/policy_util.h"

namespace warmroute::routing {

Decision LlmdWeightedPolicy::Route(const RoutingRequest& request, RoutingContext& ctx) {
  bool all_scraped = true;
  for (BackendId b : ctx.candidates) all_scraped = all_scraped && ctx.fleet.backend(b).metrics;
  auto queue_of = [&](BackendId b) {
    const BackendState& state = ctx.fleet.backend(b);
    return static_cast<double>(all_scraped ? state.metrics->num_waiting : state.in_flight);
  };
  double min_q = std::numeric_limits<double>::infinity();
  double max_q = -std::numeric_limits<double>::infinity();
  int32_t best_blocks = 0;
  for (BackendId b : ctx.candidates) {
    min_q = std::min(min_q, queue_of(b));
    max_q = std::max(max_q, queue_of(b));
    best_blocks = std::max(best_blocks, ctx.matched_blocks[b]);
  }
  const double key_blocks = static_cast<double>(request.key.block_hashes.size());

  std::vector<double> total(ctx.fleet.size(), 0);
  for (BackendId b : ctx.candidates) {
    const BackendState& state = ctx.fleet.backend(b);
    const double prefix = key_blocks > 0 ? ctx.matched_blocks[b] / key_blocks : 0.0;
    const double queue = max_q > min_q ? (max_q - queue_of(b)) / (max_q - min_q) : 1.0;
    double usage = 0;
    if (state.metrics) {
      usage = state.metrics->kv_usage;
    } else if (state.kv_capacity_tokens > 0) {
      usage = static_cast<double>(state.decode_context_tokens) /
              static_cast<double>(state.kv_capacity_tokens);
    }
    const double kv = 1.0 - std::clamp(usage, 0.0, 1.0);
    total[b] =
        options_.prefix_weight * prefix + options_.queue_weight * queue + options_.kv_weight * kv;
  }
  auto cost = [&](BackendId b) { return -total[b]; };
  const BackendId chosen = ArgMin(ctx.candidates, cost, &ctx.rng);
  return DecideByCost(request, ctx, chosen, best_blocks, cost);
}

namespace {

absl::StatusOr<std::unique_ptr<Policy>> MakeWithDefaults(ParamReader& params,
                                                         LlmdWeightedOptions options,
                                                         std::string_view name) {
  options.prefix_weight = params.Get("prefix_weight", options.prefix_weight);
  options.queue_weight = params.Get("queue_weight", options.queue_weight);
  options.kv_weight = params.Get("kv_weight", options.kv_weight);
  params.Require(options.prefix_weight >= 0, "prefix_weight", "must be non-negative");
  params.Require(options.queue_weight >= 0, "queue_weight", "must be non-negative");
  params.Require(options.kv_weight >= 0, "kv_weight", "must be non-negative");
  absl::Status status = params.status();
  if (!status.ok()) return status;
  return std::make_unique<LlmdWeightedPolicy>(options, name);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Policy>> MakeLlmdWeightedPolicy(ParamReader& params) {
  return MakeWithDefaults(params, LlmdWeightedOptions{}, "llmd_weighted");
}

absl::StatusOr<std::unique_ptr<Policy>> MakeLlmdPrecisePolicy(ParamReader& params) {
  return MakeWithDefaults(params, {.prefix_weight = 2, .queue_weight = 1, .kv_weight = 1},
                          "llmd_precise");
}

}  // namespace warmroute::routing
