// Reads a workload's shape overrides (WorkloadOptions::params, "KEY" -> number) into its config
// struct. Each generator declares the keys it knows, with their range, in its
// <Name>ConfigFromParams (generators.h); a key it does not declare, a value out of range or a
// fraction where a whole number is expected is an InvalidArgument naming the key (and, for an
// unknown key, listing the valid ones for that workload).
//
// Usage (in a generator's .cc):
//   ParamReader reader("support-bot", params);
//   reader.Int("system_prompts", 1, kMaxCount, &config.num_system_prompts);
//   reader.Double("zipf_exponent", 0, 100, &config.zipf_exponent);
//   WR_RETURN_IF_ERROR(reader.Finish());
//
// Thread-safety: none; a reader is a local of one parse.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "core/workload/workload.h"

namespace warmroute::workload {

// Ranges shared by the generators: counts of prompts, groups, types and turns, and token lengths
// of one piece of text. Generators also bound the distinct text they generate up front (count x
// length) by kMaxGeneratedTokens, so a typo cannot exhaust memory.
inline constexpr int64_t kMaxCount = 1'000'000;
inline constexpr int64_t kMaxPieceTokens = 1'000'000;
inline constexpr int64_t kMaxGeneratedTokens = 100'000'000;

class ParamReader {
 public:
  // `workload` names the workload in messages; `params` must outlive the reader.
  ParamReader(std::string_view workload, const WorkloadParams& params);
  ParamReader(const ParamReader&) = delete;
  ParamReader& operator=(const ParamReader&) = delete;

  // Declares `key` as a whole number in [min, max]; when params has it and it is valid, stores it
  // in *value (otherwise *value keeps its default). The first error is kept for Finish().
  void Int(std::string_view key, int64_t min, int64_t max, int64_t* value);
  void Int(std::string_view key, int64_t min, int64_t max, int* value);
  // Declares `key` as a finite number in [min, max].
  void Double(std::string_view key, double min, double max, double* value);
  // A cross-key condition on the values read so far: when `ok` is false, `message` (which should
  // name the keys involved) becomes an error attached to `key`.
  void Require(bool ok, std::string_view key, std::string_view message);

  // OK, or the first error: a bad value, a failed Require, or a key that was never declared
  // (naming it and listing the declared keys).
  absl::Status Finish() const;

 private:
  const double* Find(std::string_view key);
  void Fail(std::string_view key, std::string message);

  const std::string workload_;
  const WorkloadParams& params_;
  std::vector<std::string> declared_;
  absl::Status first_error_;
};

}  // namespace warmroute::workload
