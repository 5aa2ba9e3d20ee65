// consistent_hash: consistent hashing with bounded loads on the first blocks of the prefix.
//
// Rule. Each candidate backend owns `virtual_nodes` points on a 64-bit hash ring, placed by its
// name (point i = Mix64(NameHash(name) + i * golden ratio)), so the ring depends only on the set
// of backends: it is rebuilt when the candidate set changes (membership, health, draining) and
// a backend's arrival or departure moves only the keys of the arcs it takes or gives back —
// about 1/n of them. The request's key is the chained hash of its first `prefix_blocks` blocks
// (policy_util.h: PrefixPlacementKey), so requests sharing those blocks share a ring position.
// From that position the ring is walked clockwise and the request goes to the first backend not
// over its bound:
//     in_flight(b) + 1 <= ceil(balance_factor * (total_in_flight + 1) / n)
// (total over the n candidates, the +1 counting this request). Some backend always satisfies it
// since balance_factor >= 1. Alternates: the next distinct backends on the walk.
//
// Parameters:
//   prefix_blocks   4     blocks of the prefix key that choose the position: 4 blocks of the
//                         default 64 characters = 256 characters (about 64 tokens), enough to
//                         tell system prompts apart while requests that share them stay
//                         together. Caveat: a workload whose requests all share a longer common
//                         head (the Mooncake conversation trace: one 512-token block, i.e.
//                         32 blocks) puts everything on one position; only the load bound then
//                         spreads it. That is the baseline's known weakness.
//   balance_factor  1.25  c of "Consistent Hashing with Bounded Loads" (Mirrokni, Thorup,
//                         Zadimoghaddam, SODA 2018): a backend may carry at most c x the average
//                         load. 1.25 is the value HAProxy's hash-balance-factor is usually set to
//                         (`hash-balance-factor 125`, the setting described with the feature by
//                         Vimeo, who contributed it) and that KubeAI's PrefixHash and SGLang's
//                         prefix_hash default to.
//   virtual_nodes   100   points per backend: the load share of each backend is then within a
//                         few percent of 1/n (standard deviation ~ 1/sqrt(100) of the share).
// Load is in_flight (the router's own count). Reason: kHash. Scores: in_flight (requests).
//
// Thread-safety: none (policy.h).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/routing/policies/param_reader.h"
#include "core/routing/policy.h"

namespace warmroute::routing {

struct ConsistentHashOptions {
  int prefix_blocks = 4;
  double balance_factor = 1.25;
  int virtual_nodes = 100;
};

class ConsistentHashPolicy final : public Policy {
 public:
  explicit ConsistentHashPolicy(ConsistentHashOptions options) : options_(options) {}
  std::string_view name() const override { return "consistent_hash"; }
  Decision Route(const RoutingRequest& request, RoutingContext& ctx) override;
  void OnBackendRemoved(BackendId backend) override;

 private:
  using Ring = std::vector<std::pair<uint64_t, BackendId>>;  // sorted by point
  const Ring& RingFor(const RoutingContext& ctx);

  ConsistentHashOptions options_;
  // Rings by candidate set (a hash of the candidate ids); a few sets coexist when models differ.
  absl::flat_hash_map<uint64_t, Ring> rings_;
  std::vector<bool> visited_;  // scratch for the ring walk
};

absl::StatusOr<std::unique_ptr<Policy>> MakeConsistentHashPolicy(ParamReader& params);

}  // namespace warmroute::routing
