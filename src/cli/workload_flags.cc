#include "cli/workload_flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace warmroute::cli {

absl::StatusOr<workload::WorkloadParams> ParseWorkloadParams(
    const std::vector<std::string>& flags) {
  workload::WorkloadParams out;
  for (const std::string& flag : flags) {
    const size_t eq = flag.find('=');
    double value = 0;
    if (eq == std::string::npos || eq == 0 || !absl::SimpleAtod(flag.substr(eq + 1), &value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--workload-param \"", flag, "\": expected KEY=NUMBER, e.g. system_prompts=256"));
    }
    if (!out.emplace(flag.substr(0, eq), value).second) {
      return absl::InvalidArgumentError(absl::StrCat("--workload-param \"", flag, "\": key \"",
                                                     flag.substr(0, eq), "\" given twice"));
    }
  }
  return out;
}

std::string DescribeWorkload(const workload::WorkloadOptions& options) {
  if (options.params.empty()) return options.name;
  std::vector<std::string> items;
  for (const auto& [key, value] : options.params) items.push_back(absl::StrCat(key, "=", value));
  return absl::StrCat(options.name, " (", absl::StrJoin(items, ", "), ")");
}

}  // namespace warmroute::cli
