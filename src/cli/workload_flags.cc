#include "cli/workload_flags.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"

namespace warmroute::cli {
namespace {

struct OptionFlag {
  std::string_view option;  // WorkloadOptions' field, as ParamOf names it
  std::string_view flag;
};

constexpr OptionFlag kOptionFlags[] = {{"num_requests", "--requests"},
                                       {"rate_per_s", "--rate"},
                                       {"trace_speed", "--trace-speed"},
                                       {"jitter_s", "--trace-jitter-s"},
                                       {"num_tenants", "--tenants"}};

absl::Status PathError(std::string_view flag, const std::string& path, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(flag), " ", path, ": cannot write there: ", std::string(why)));
}

}  // namespace

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

std::string WorkloadFlagError(const absl::Status& status) {
  const std::string message(status.message());
  const std::optional<std::string> param = ParamOf(status);
  if (!param) return message;
  for (const OptionFlag& o : kOptionFlags) {
    if (*param != o.option) continue;
    // The core's message starts with the option's name: say the flag instead.
    if (message.rfind(o.option, 0) == 0) {
      return absl::StrCat(std::string(o.flag), message.substr(o.option.size()));
    }
    return absl::StrCat(std::string(o.flag), ": ", message);
  }
  return absl::StrCat("--workload-param ", *param, ": ", message);
}

absl::Status CheckRateFlag(std::string_view flag, double rate, int64_t requests) {
  if (!(rate > 0 && std::isfinite(rate))) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(flag), " must be a positive number (requests/s), got ", rate));
  }
  return CheckArrivalSpan(absl::StrCat(std::string(flag), " ", rate), rate, requests);
}

absl::Status CheckArrivalSpan(std::string_view what, double rate, int64_t requests) {
  const double span_s = static_cast<double>(requests) / rate;
  if (!(span_s <= workload::kMaxArrivalSeconds)) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), " is too low: ", requests, " requests would arrive over ",
                     span_s, " s, beyond the ", workload::kMaxArrivalSeconds,
                     " s (about 3 years) a run may span; the rate must be at least ",
                     static_cast<double>(requests) / workload::kMaxArrivalSeconds, " requests/s"));
  }
  return absl::OkStatus();
}

absl::Status CheckOutputFile(std::string_view flag, const std::string& path) {
  if (path.empty())
    return absl::InvalidArgumentError(absl::StrCat(std::string(flag), " must not be empty"));
  const std::filesystem::path file(path);
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) return PathError(flag, path, "it is a directory");
  if (std::filesystem::exists(file, ec)) {
    if (::access(path.c_str(), W_OK) != 0) return PathError(flag, path, std::strerror(errno));
    return absl::OkStatus();
  }
  const std::filesystem::path parent =
      file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
  if (!std::filesystem::exists(parent, ec)) {
    return PathError(flag, path, absl::StrCat("directory ", parent.string(), " does not exist"));
  }
  if (!std::filesystem::is_directory(parent, ec)) {
    return PathError(flag, path, absl::StrCat(parent.string(), " is not a directory"));
  }
  if (::access(parent.c_str(), W_OK | X_OK) != 0) {
    return PathError(flag, path,
                     absl::StrCat("directory ", parent.string(), ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status CheckOutputDir(std::string_view flag, const std::string& path) {
  if (path.empty())
    return absl::InvalidArgumentError(absl::StrCat(std::string(flag), " must not be empty"));
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_directory(path, ec)) {
    return PathError(flag, path, "it is a file, not a directory");
  }
  std::filesystem::create_directories(path, ec);
  if (ec) return PathError(flag, path, ec.message());
  if (::access(path.c_str(), W_OK | X_OK) != 0) return PathError(flag, path, std::strerror(errno));
  return absl::OkStatus();
}

CLI::Validator WholeNumber(int64_t min, int64_t max) {
  const std::string range = max == std::numeric_limits<int64_t>::max()
                                ? absl::StrCat("at least ", min)
                                : absl::StrCat("in [", min, ", ", max, "]");
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        int64_t value = 0;
        // SimpleAtoi refuses what does not fit in int64; a leading 0 stays decimal.
        if (absl::SimpleAtoi(text, &value) && value >= min && value <= max) return "";
        return absl::StrCat("must be a whole number ", range, ", got ", text);
      },
      "INT");
}

CLI::Validator SeedNumber() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        uint64_t value = 0;
        // SimpleAtoi refuses a sign on an unsigned number, and what does not fit.
        if (absl::SimpleAtoi(text, &value)) return "";
        return absl::StrCat("must be a whole number in [0, ", std::numeric_limits<uint64_t>::max(),
                            "], got ", text);
      },
      "UINT");
}

}  // namespace warmroute::cli
