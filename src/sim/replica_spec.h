// The simulated fleet: one ReplicaSpec per replica (timing profile and KV capacity), so fleets
// may be heterogeneous. Parsed from the command line's --replica-spec values:
//
//   PROFILE[:count=N][:kv=TOKENS]
//
// e.g. "llama-3.1-70b-tp4-h100:count=6" and "llama-3.1-70b-tp8-h200:count=2:kv=2000000" give
// 8 replicas, the first 6 of one kind. count defaults to 1, kv to the profile's default capacity.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/engine/timing_model.h"

namespace warmroute::sim {

// The most replicas a simulated fleet may have.
inline constexpr int64_t kMaxReplicas = 100000;

struct ReplicaSpec {
  const engine::TimingProfile* profile = nullptr;  // a built-in profile (never null when valid)
  int64_t kv_capacity_tokens = 0;                  // > 0: the replica's KV capacity

  bool operator==(const ReplicaSpec& other) const = default;
};

// `replicas` copies of `profile_name` with `kv_capacity_tokens` each (0 = the profile's
// default). InvalidArgument naming the flag for an unknown profile or a count or capacity out of
// range (replicas in [1, 100000], capacity >= 0).
absl::StatusOr<std::vector<ReplicaSpec>> UniformFleet(std::string_view profile_name,
                                                      int64_t replicas, int64_t kv_capacity_tokens);

// The fleet described by one or more --replica-spec values (syntax above), in order.
// InvalidArgument naming the offending spec for any syntax error, unknown profile, bad value or a
// key given twice in one spec.
absl::StatusOr<std::vector<ReplicaSpec>> ParseReplicaSpecs(const std::vector<std::string>& specs);

// "8 x llama-3.1-70b-tp4-h100 (kv 460000 tokens)" for a uniform fleet; one such group per run
// of equal specs otherwise, joined by " + ".
std::string DescribeFleet(const std::vector<ReplicaSpec>& fleet);

}  // namespace warmroute::sim
