#include "core/routing/policies/power_of_two.h"

#include "core/routing/policies/policy_util.h"

namespace warmroute::routing {

Decision PowerOfTwoPolicy::Route(const RoutingRequest& request, RoutingContext& ctx) {
  const size_t n = ctx.candidates.size();
  if (n == 1) return DecideFor(request, ctx, ctx.candidates[0], Reason::kLeastLoad);
  const size_t i = static_cast<size_t>(ctx.rng.UniformInt(n));
  size_t j = static_cast<size_t>(ctx.rng.UniformInt(n - 1));
  if (j >= i) ++j;
  const BackendId a = ctx.candidates[i];
  const BackendId b = ctx.candidates[j];
  const int64_t load_a = ctx.fleet.backend(a).in_flight;
  const int64_t load_b = ctx.fleet.backend(b).in_flight;
  const BackendId chosen = load_b < load_a ? b : a;
  Decision decision = DecideFor(request, ctx, chosen, Reason::kLeastLoad);
  decision.alternates.push_back(chosen == a ? b : a);
  decision.scores = {
      {.backend = a, .score = static_cast<double>(load_a), .matched_blocks = ctx.matched_blocks[a]},
      {.backend = b, .score = static_cast<double>(load_b), .matched_blocks = ctx.matched_blocks[b]},
  };
  return decision;
}

absl::StatusOr<std::unique_ptr<Policy>> MakePowerOfTwoPolicy(ParamReader& params) {
  absl::Status status = params.status();
  if (!status.ok()) return status;
  return std::make_unique<PowerOfTwoPolicy>();
}

}  // namespace warmroute::routing
