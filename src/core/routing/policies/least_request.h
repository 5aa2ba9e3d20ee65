// least_request: the eligible backend with the fewest requests in flight.
//
// Rule: argmin over candidates of in_flight (the router's own count of requests dispatched and
// not yet finished or failed: exact and without scrape delay). Ties go to a uniformly random one
// of the tied backends (seeded Rng): with the lowest id instead, an idle fleet under light load
// would send almost everything to backend 0. Ignores locality. Source: the classic least-
// connections balancer (HAProxy `balance leastconn`, Envoy LEAST_REQUEST with all hosts
// considered; vLLM production-stack's least-loaded routing). Parameters: none.
// Scores: in_flight (requests).
//
// Thread-safety: none (policy.h).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "core/routing/policies/param_reader.h"
#include "core/routing/policy.h"

namespace warmroute::routing {

class LeastRequestPolicy final : public Policy {
 public:
  std::string_view name() const override { return "least_request"; }
  Decision Route(const RoutingRequest& request, RoutingContext& ctx) override;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeLeastRequestPolicy(ParamReader& params);

}  // namespace warmroute::routing
