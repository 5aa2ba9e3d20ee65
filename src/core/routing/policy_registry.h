// Routing policies by name: the factory the gateway's config, the simulator and the benchmarks
// build policies with. Each name's rule, parameters and defaults are documented at the top of
// its file under policies/.
//
// Usage:
//   absl::StatusOr<std::unique_ptr<Policy>> p = MakePolicy("consistent_hash",
//                                                          {{"balance_factor", 1.5}});
//   for (const std::string& name : PolicyNames()) ...   // "warmroute" (the default) first
//
// Errors: NotFound for an unknown name (the message lists the known ones); InvalidArgument for an
// unknown parameter or an out-of-range value (the message names the parameter and the policy).
//
// Thread-safety: thread-safe (stateless).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/routing/policies/param_reader.h"
#include "core/routing/policy.h"

namespace warmroute::routing {

// The policy used when the config names none.
inline constexpr std::string_view kDefaultPolicy = "warmroute";

// Builds the policy called `name` with `params` overriding its defaults.
absl::StatusOr<std::unique_ptr<Policy>> MakePolicy(std::string_view name,
                                                   const PolicyParams& params);

// Every policy name, in a stable order: "warmroute" first, then the baselines.
std::vector<std::string> PolicyNames();

}  // namespace warmroute::routing
