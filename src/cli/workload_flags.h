// Flags shared by `warmroute sim` and `warmroute bench`: --workload-param KEY=NUMBER parsing, a
// one-line description of the workload for reports, the checks both commands make on their
// workload flags and output paths, and a CLI11 validator for whole-number flags. Every error
// names the flag as the user typed it (e.g. `--rate`).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/workload/workload.h"

namespace warmroute::cli {

// --tenants: tenants t0..tN-1 are spread over the requests; a million is far more than any run has
// requests to share among them.
inline constexpr int64_t kMaxTenants = 1'000'000;

// "KEY=NUMBER" workload shape overrides; InvalidArgument for a malformed flag or a key given
// twice.
absl::StatusOr<workload::WorkloadParams> ParseWorkloadParams(const std::vector<std::string>& flags);

// "support-bot", or "support-bot (system_prompts=300, zipf_exponent=0.8)" with overrides.
std::string DescribeWorkload(const workload::WorkloadOptions& options);

// The message of a workload::ValidateWorkloadOptions error in the commands' terms: an option's
// error names its flag (num_requests -> --requests, rate_per_s -> --rate, trace_speed ->
// --trace-speed, jitter_s -> --trace-jitter-s, num_tenants -> --tenants), a shape parameter's
// is prefixed with "--workload-param KEY: ".
std::string WorkloadFlagError(const absl::Status& status);

// Checks an arrival rate `rate` (requests/s) given by `flag` for `requests` requests: a positive
// finite number (CheckArrivalSpan below).
absl::Status CheckRateFlag(std::string_view flag, double rate, int64_t requests);

// Checks that `requests` requests at `rate` requests/s arrive within workload::kMaxArrivalSeconds;
// the error begins with `what` (e.g. "--rate 1e-12") and gives the lowest rate that fits.
absl::Status CheckArrivalSpan(std::string_view what, double rate, int64_t requests);

// Checks up front that the file `path` given by `flag` can be written: not empty, not a
// directory, in an existing directory, with write permission. The error gives the OS's reason.
// Creates nothing.
absl::Status CheckOutputFile(std::string_view flag, const std::string& path);

// Checks up front that `path` given by `flag` can serve as an output directory: creates it (and
// its parents) when missing; an error (with the OS's reason) when it is empty, a file, or not
// writable.
absl::Status CheckOutputDir(std::string_view flag, const std::string& path);

// A validator for an integer flag: the text must be a decimal whole number in [min, max]. CLI11's
// own conversion saturates out-of-range numbers (99999999999999999999 becomes INT64_MAX) and
// reads "010" as octal; this one reports "--flag: must be a whole number in [min, max], got TEXT"
// instead. With max == INT64_MAX the message says "at least min".
CLI::Validator WholeNumber(int64_t min, int64_t max);

// A validator for a seed flag: a decimal whole number in [0, 2^64 - 1] ("--seed: must be a whole
// number in [0, 18446744073709551615], got -1"). CLI11's own conversion wraps -1 to 2^64 - 1.
CLI::Validator SeedNumber();

}  // namespace warmroute::cli
