// Workload flags shared by `warmroute sim` and `warmroute bench`: --workload-param KEY=NUMBER
// parsing and a one-line description of the workload for reports.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/workload/workload.h"

namespace warmroute::cli {

// "KEY=NUMBER" workload shape overrides; InvalidArgument for a malformed flag or a key given
// twice.
absl::StatusOr<workload::WorkloadParams> ParseWorkloadParams(const std::vector<std::string>& flags);

// "support-bot", or "support-bot (system_prompts=300, zipf_exponent=0.8)" with overrides.
std::string DescribeWorkload(const workload::WorkloadOptions& options);

}  // namespace warmroute::cli
