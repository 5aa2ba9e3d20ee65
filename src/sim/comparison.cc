#include "sim/comparison.h"

#include <memory>
#include <utility>

#include "common/status.h"
#include "core/routing/policy_registry.h"
#include "sim/simulation.h"

namespace warmroute::sim {

absl::StatusOr<Comparison> RunComparison(const SimOptions& options,
                                         const std::vector<std::string>& policies,
                                         const std::map<std::string, routing::PolicyParams>& params,
                                         bool bounds, const RunCallback& on_run) {
  static const routing::PolicyParams kNoParams;
  Comparison comparison;
  for (const std::string& name : policies) {
    auto it = params.find(name);
    const routing::PolicyParams& policy_params = it == params.end() ? kNoParams : it->second;
    SimOptions run_options = options;
    if (name != "warmroute") {  // peers run as they ship
      run_options.prewarm.reset();
      run_options.gossip.reset();
    }
    WR_ASSIGN_OR_RETURN(RunResult run, SimulateFleet(run_options, [&] {
                          return routing::MakePolicy(name, policy_params);
                        }));
    if (on_run) on_run(run);
    comparison.runs.push_back(std::move(run));
  }
  if (bounds) {
    WR_ASSIGN_OR_RETURN(RunResult pooled, SimulatePooled(options, /*infinite_bound=*/true));
    if (on_run) on_run(pooled);
    comparison.pooled = std::move(pooled);
  }
  return comparison;
}

}  // namespace warmroute::sim
