// One `warmroute sim` comparison: every listed policy on the identical request stream, plus the
// bounds of that stream (pooled-cache and infinite-cache, simulation.h), run one after another.
//
// Usage:
//   absl::StatusOr<Comparison> c = RunComparison(options, {"warmroute", "round_robin"}, {},
//                                                /*bounds=*/true, nullptr);
//   std::cout << FormatTable(c->runs, c->pooled ? &*c->pooled : nullptr);
//
// Thread-safety: each call is self-contained.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/routing/policies/param_reader.h"
#include "sim/run_result.h"
#include "sim/sim_options.h"

namespace warmroute::sim {

struct Comparison {
  std::vector<RunResult> runs;      // in the order of the policy names
  std::optional<RunResult> pooled;  // with the infinite-cache bound; set when bounds were asked
};

// Called after each run with its name and result (for progress output).
using RunCallback = std::function<void(const RunResult&)>;

// Builds each policy with routing::MakePolicy(name, params[name]) and runs it (with
// options.prewarm for `warmroute` only: the other policies run without it); then, with
// `bounds`, the pooled run. The first error (an unknown policy or parameter, a bad workload) is
// returned as is.
absl::StatusOr<Comparison> RunComparison(const SimOptions& options,
                                         const std::vector<std::string>& policies,
                                         const std::map<std::string, routing::PolicyParams>& params,
                                         bool bounds, const RunCallback& on_run);

}  // namespace warmroute::sim
