#include "core/routing/policies/random.h"

#include "core/routing/policies/policy_util.h"

namespace warmroute::routing {

Decision RandomPolicy::Route(const RoutingRequest& request, RoutingContext& ctx) {
  const size_t n = ctx.candidates.size();
  const size_t first = static_cast<size_t>(ctx.rng.UniformInt(n));
  Decision decision = DecideFor(request, ctx, ctx.candidates[first], Reason::kRandom);
  for (size_t i = 1; i < n && decision.alternates.size() < kMaxAlternates; ++i) {
    decision.alternates.push_back(ctx.candidates[(first + i) % n]);
  }
  return decision;
}

absl::StatusOr<std::unique_ptr<Policy>> MakeRandomPolicy(ParamReader& params) {
  absl::Status status = params.status();
  if (!status.ok()) return status;
  return std::make_unique<RandomPolicy>();
}

}  // namespace warmroute::routing
