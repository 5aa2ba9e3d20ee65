// The workload registry: builds a generator by name from WorkloadOptions, with each generator's
// default shape (generators.h; each generator's .cc documents its defaults and their source) with
// WorkloadOptions::params applied.
#include "core/workload/workload.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "core/workload/generators.h"
#include "core/workload/mooncake_trace.h"
#include "core/workload/workload_params.h"

namespace warmroute::workload {
namespace {

constexpr std::string_view kTracePrefix = "trace:";

absl::Status ValidateOptions(const WorkloadOptions& options, bool trace) {
  if (options.num_requests < 0) {
    return InvalidParam("num_requests", absl::StrCat("num_requests must not be negative, got ",
                                                     options.num_requests));
  }
  if (!trace && !(options.rate_per_s > 0 && std::isfinite(options.rate_per_s))) {
    return InvalidParam("rate_per_s", absl::StrCat("rate_per_s must be a positive number, got ",
                                                   options.rate_per_s));
  }
  // The expected span of the arrivals; kMaxArrivalSeconds (workload.h) keeps it representable.
  if (!trace &&
      static_cast<double>(options.num_requests) / options.rate_per_s > kMaxArrivalSeconds) {
    return InvalidParam(
        "rate_per_s",
        absl::StrCat("rate_per_s ", options.rate_per_s, " is too low: ", options.num_requests,
                     " requests would arrive over ",
                     static_cast<double>(options.num_requests) / options.rate_per_s,
                     " s, beyond the ", kMaxArrivalSeconds, " s (about 3 years) a run may span"));
  }
  if (trace && !(options.trace_speed > 0 && std::isfinite(options.trace_speed))) {
    return InvalidParam("trace_speed", absl::StrCat("trace_speed must be a positive number, got ",
                                                    options.trace_speed));
  }
  if (trace && !(options.jitter_s >= 0 && options.jitter_s <= kMaxArrivalSeconds)) {
    return InvalidParam("jitter_s", absl::StrCat("jitter_s must be in [0, ", kMaxArrivalSeconds,
                                                 "], got ", options.jitter_s));
  }
  if (options.num_tenants < 1) {
    return InvalidParam("num_tenants",
                        absl::StrCat("num_tenants must be at least 1, got ", options.num_tenants));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> WorkloadNames() {
  return {"support-bot", "shared-prefix", "llmd-73", "multi-turn", "agent", "unique"};
}

absl::Status ValidateWorkloadOptions(const WorkloadOptions& options) {
  const std::string& name = options.name;
  const bool trace = name.rfind(kTracePrefix, 0) == 0;
  if (absl::Status status = ValidateOptions(options, trace); !status.ok()) return status;
  if (trace) {
    if (name.size() == kTracePrefix.size()) {
      return absl::InvalidArgumentError("workload trace: needs a file: trace:PATH");
    }
    return ParamReader(name, options.params).Finish();  // a trace takes no parameters
  }
  if (name == "support-bot") return SupportBotConfigFromParams(options.params).status();
  if (name == "shared-prefix") return SharedPrefixConfigFromParams(options.params).status();
  if (name == "llmd-73") {
    return SharedPrefixConfigFromParams(options.params, Llmd73Config(), "llmd-73").status();
  }
  if (name == "multi-turn") return MultiTurnConfigFromParams(options.params).status();
  if (name == "agent") return AgentConfigFromParams(options.params).status();
  if (name == "unique") return UniqueConfigFromParams(options.params).status();
  return absl::InvalidArgumentError(
      absl::StrCat("unknown workload \"", name, "\"; expected one of ",
                   absl::StrJoin(WorkloadNames(), ", "), " or trace:PATH"));
}

int RequestsPerArrival(const WorkloadOptions& options) {
  if (options.name == "multi-turn") {
    const absl::StatusOr<MultiTurnConfig> config = MultiTurnConfigFromParams(options.params);
    return config.ok() ? config->turns_per_session : MultiTurnConfig{}.turns_per_session;
  }
  if (options.name == "agent") {
    const absl::StatusOr<AgentConfig> config = AgentConfigFromParams(options.params);
    return config.ok() ? config->steps_per_trajectory : AgentConfig{}.steps_per_trajectory;
  }
  return 1;
}

absl::StatusOr<std::unique_ptr<Workload>> MakeWorkload(const WorkloadOptions& options,
                                                       uint64_t seed) {
  if (absl::Status status = ValidateWorkloadOptions(options); !status.ok()) return status;
  const std::string& name = options.name;
  if (name.rfind(kTracePrefix, 0) == 0) {
    return MakeTraceWorkload(options, name.substr(kTracePrefix.size()), seed);
  }
  // Validated above, so each config parses.
  if (name == "support-bot") {
    return MakeSupportBot(options, *SupportBotConfigFromParams(options.params), seed);
  }
  if (name == "shared-prefix") {
    return MakeSharedPrefix(options, *SharedPrefixConfigFromParams(options.params), seed);
  }
  if (name == "llmd-73") {
    return MakeSharedPrefix(options, *SharedPrefixConfigFromParams(options.params, Llmd73Config(), "llmd-73"),
                            seed);
  }
  if (name == "multi-turn") {
    return MakeMultiTurn(options, *MultiTurnConfigFromParams(options.params), seed);
  }
  if (name == "agent") return MakeAgent(options, *AgentConfigFromParams(options.params), seed);
  return MakeUnique(options, *UniqueConfigFromParams(options.params), seed);
}

}  // namespace warmroute::workload
