// Policy parameters: a small map of numeric overrides from the config (e.g. {"balance_factor",
// 1.5}), read by each policy's factory with its own defaults. Unknown keys are errors, so a typo
// in a config file is reported instead of silently ignored.
//
// Usage:
//   ParamReader reader("consistent_hash", params);
//   options.balance_factor = reader.Get("balance_factor", 1.25);
//   options.virtual_nodes = reader.GetInt("virtual_nodes", 160, 1, 10000);
//   reader.Require(options.balance_factor >= 1, "balance_factor", "must be at least 1");
//   WR_RETURN_IF_ERROR(reader.status());   // InvalidArgument naming the key and the policy
//
// Thread-safety: none; a reader is used by one factory call.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace warmroute::routing {

using PolicyParams = std::map<std::string, double, std::less<>>;

// Upper bounds of the integer parameters that count prefix blocks (a prefix key holds at most
// 16 MiB / 64-character blocks = 262,144 of them) and placement homes (a fleet has at most
// 100,000 replicas): beyond them a value only hides a typo.
inline constexpr int kMaxParamBlocks = 1'000'000;
inline constexpr int kMaxParamHomes = 100'000;

class ParamReader {
 public:
  ParamReader(std::string_view policy, const PolicyParams& params);

  std::string_view policy() const { return policy_; }

  // The override of `key`, or `default_value` when there is none. Marks `key` as known. An
  // override that is not finite (inf, nan) is an error ("must be a finite number").
  double Get(std::string_view key, double default_value);

  // The override of an integer parameter, or `default_value`. An override that is not a whole
  // number in [min, max] is an error ("must be a whole number in [min, max], got V"; V as given,
  // never cast first) and yields `default_value`.
  int GetInt(std::string_view key, int default_value, int min, int max);

  // Records an InvalidArgument error ("policy P: parameter K <what>, got V") unless `ok`.
  void Require(bool ok, std::string_view key, std::string_view what);

  // OK, or the first error: a failed Require, else an override that no Get asked for.
  absl::Status status() const;

 private:
  std::string policy_;
  const PolicyParams& params_;
  std::set<std::string, std::less<>> known_;
  absl::Status error_;
};

}  // namespace warmroute::routing
