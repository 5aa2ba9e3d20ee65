// A fleet membership change in the middle of a simulated run — one replica added or removed at a
// given virtual time — parsed from `warmroute sim --membership`:
//
//   add@T      the fleet starts without one replica and it is added T seconds into the run
//   remove@T   the fleet starts whole and one replica is removed T seconds into the run
//
// T is in simulated seconds from the start of the run (> 0; fractions allowed). Which replica is
// added or removed is chosen from the run's seed (ChooseMembershipReplica), so it is the same for
// every policy of one comparison and the same on every rerun.
//
// The simulator applies the change through the very Router calls the gateway's admin API makes
// (gateway/fleet/backends.cc): POST /admin/backends → Router::AddBackend, DELETE /admin/backends/{name}
// → Router::RemoveBackend. As with the gateway's DELETE, a removed replica gets no new request
// and the requests already on it finish there (it drains); its cache is lost to the fleet.
//
// Usage:
//   absl::StatusOr<MembershipChange> c = ParseMembershipChange("remove@60", /*replicas=*/8, seed);
//   options.membership = *c;
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/clock.h"

namespace warmroute::sim {

struct MembershipChange {
  enum class Kind : uint8_t { kAdd, kRemove };
  Kind kind = Kind::kRemove;
  Duration at{};         // from the start of the run (virtual time zero)
  uint32_t replica = 0;  // index into SimOptions::replicas

  bool operator==(const MembershipChange& other) const = default;
};

// "add" or "remove".
std::string_view MembershipKindName(MembershipChange::Kind kind);

// "remove r3 at 60 s", for reports.
std::string DescribeMembershipChange(const MembershipChange& change);

// The replica a change of a fleet of `replicas` (>= 2) adds or removes under `seed`: a pure
// function of both, uniform over the replicas.
uint32_t ChooseMembershipReplica(uint64_t seed, size_t replicas);

// Parses "add@T" or "remove@T" (syntax above) for a fleet of `replicas` and picks the replica
// with ChooseMembershipReplica(seed, replicas). InvalidArgument naming --membership for a syntax
// error, a time that is not a positive number of seconds, or a fleet of fewer than 2 replicas
// (removing the only replica leaves nothing to route to; adding one needs one to start with).
absl::StatusOr<MembershipChange> ParseMembershipChange(std::string_view spec, size_t replicas,
                                                       uint64_t seed);

}  // namespace warmroute::sim
