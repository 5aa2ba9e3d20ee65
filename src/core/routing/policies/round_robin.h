// round_robin: the eligible backends of the model in turn.
//
// Rule: a counter advances by one per request; the request goes to candidates[counter mod n]
// (candidates in backend-id order). Ignores load and locality: the baseline every router has
// (SGLang router `round_robin`, vLLM production-stack `roundrobin`, Envoy ROUND_ROBIN, HAProxy
// `balance roundrobin`). Parameters: none. Scores: none (no per-candidate quantity).
//
// Thread-safety: none (policy.h).
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "core/routing/policies/param_reader.h"
#include "core/routing/policy.h"

namespace warmroute::routing {

class RoundRobinPolicy final : public Policy {
 public:
  std::string_view name() const override { return "round_robin"; }
  Decision Route(const RoutingRequest& request, RoutingContext& ctx) override;

 private:
  uint64_t next_ = 0;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeRoundRobinPolicy(ParamReader& params);

}  // namespace warmroute::routing
