// random: a uniformly random eligible backend of the model.
//
// Rule: candidates[UniformInt(n)] from the router's seeded Rng, so a run is reproducible for a
// given seed. Ignores load and locality (SGLang router `random`, Envoy RANDOM). Parameters: none.
// Scores: none.
//
// Thread-safety: none (policy.h).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "core/routing/policies/param_reader.h"
#include "core/routing/policy.h"

namespace warmroute::routing {

class RandomPolicy final : public Policy {
 public:
  std::string_view name() const override { return "random"; }
  Decision Route(const RoutingRequest& request, RoutingContext& ctx) override;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeRandomPolicy(ParamReader& params);

}  // namespace warmroute::routing
