// power_of_two: the less loaded of two random eligible backends ("power of two choices").
//
// Rule: draw two distinct candidates uniformly (seeded Rng); route to the one with fewer
// requests in flight; on a tie, to the first drawn. With a single candidate, that one. Sources:
// Mitzenmacher, "The Power of Two Choices in Randomized Load Balancing" (IEEE TPDS 2001); SGLang
// router `power_of_two` (compares the two workers' loads); Envoy LEAST_REQUEST's default
// choice_count = 2. Parameters: none. Scores: in_flight of the two drawn backends.
//
// Thread-safety: none (policy.h).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "core/routing/policies/param_reader.h"
#include "core/routing/policy.h"

namespace warmroute::routing {

class PowerOfTwoPolicy final : public Policy {
 public:
  std::string_view name() const override { return "power_of_two"; }
  Decision Route(const RoutingRequest& request, RoutingContext& ctx) override;
};

absl::StatusOr<std::unique_ptr<Policy>> MakePowerOfTwoPolicy(ParamReader& params);

}  // namespace warmroute::routing
