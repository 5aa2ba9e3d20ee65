#include "core/routing/policies/round_robin.h"

#include "core/routing/policies/policy_util.h"

namespace warmroute::routing {

Decision RoundRobinPolicy::Route(const RoutingRequest& request, RoutingContext& ctx) {
  const size_t n = ctx.candidates.size();
  const size_t first = static_cast<size_t>(next_++ % n);
  Decision decision = DecideFor(request, ctx, ctx.candidates[first], Reason::kRoundRobin);
  for (size_t i = 1; i < n && decision.alternates.size() < kMaxAlternates; ++i) {
    decision.alternates.push_back(ctx.candidates[(first + i) % n]);
  }
  return decision;
}

absl::StatusOr<std::unique_ptr<Policy>> MakeRoundRobinPolicy(ParamReader& params) {
  absl::Status status = params.status();
  if (!status.ok()) return status;
  return std::make_unique<RoundRobinPolicy>();
}

}  // namespace warmroute::routing
