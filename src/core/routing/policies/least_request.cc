#include "core/routing/policies/least_request.h"

#include "core/routing/policies/policy_util.h"

namespace warmroute::routing {

Decision LeastRequestPolicy::Route(const RoutingRequest& request, RoutingContext& ctx) {
  auto load = [&](BackendId b) { return static_cast<double>(ctx.fleet.backend(b).in_flight); };
  const BackendId chosen = ArgMin(ctx.candidates, load, &ctx.rng);
  Decision decision = DecideFor(request, ctx, chosen, Reason::kLeastLoad);
  decision.alternates = RankedAlternates(ctx.candidates, chosen, load);
  decision.scores = ScoreAll(ctx, load);
  return decision;
}

absl::StatusOr<std::unique_ptr<Policy>> MakeLeastRequestPolicy(ParamReader& params) {
  absl::Status status = params.status();
  if (!status.ok()) return status;
  return std::make_unique<LeastRequestPolicy>();
}

}  // namespace warmroute::routing
