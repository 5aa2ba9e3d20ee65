// Test helpers for policies: a hand-built fleet and the RoutingContext a Router would pass.
// For tests only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/rng.h"
#include "core/routing/fleet_view.h"
#include "core/routing/policy.h"
#include "core/routing/prefix_index.h"

namespace warmroute::routing::testing {

// A chain of `blocks` distinct block hashes; chains with the same `seed` share their blocks.
inline std::vector<uint64_t> Chain(uint64_t seed, int blocks) {
  std::vector<uint64_t> chain;
  for (int i = 0; i < blocks; ++i)
    chain.push_back(Mix64(seed * 1000003 + static_cast<uint64_t>(i)));
  return chain;
}

inline RoutingRequest Request(uint64_t id, std::vector<uint64_t> chain, int64_t prompt_tokens) {
  RoutingRequest request;
  request.id = id;
  request.model = "m";
  request.key.block_hashes = std::move(chain);
  request.key.tokens_per_block = 16;
  request.key.prompt_tokens = prompt_tokens;
  request.prompt_tokens = prompt_tokens;
  request.max_tokens = 16;
  return request;
}

class TestFleet {
 public:
  TestFleet() : index_(PrefixIndexOptions{}), rng_(1) {}

  BackendId Add(const std::string& name, int64_t in_flight = 0) {
    BackendState state;
    state.name = name;
    state.kv_capacity_tokens = 1 << 20;
    state.in_flight = in_flight;
    state.prefill_tokens_per_s = 10000;
    const BackendId id = fleet_.Add(state);
    index_.SetCapacity(id, 1 << 16);
    candidates_.push_back(id);
    return id;
  }
  BackendState& at(BackendId b) { return fleet_.mutable_backend(b); }
  // Outstanding prefill as if just dispatched at time zero: done after tokens / rate.
  void SetOutstanding(BackendId b, int64_t tokens) {
    BackendState& state = fleet_.mutable_backend(b);
    state.outstanding_prefill_tokens = tokens;
    state.prefill_done_at =
        TimePoint{} + FromSeconds(static_cast<double>(tokens) / state.prefill_tokens_per_s);
  }
  PrefixIndex& index() { return index_; }
  std::vector<BackendId>& candidates() { return candidates_; }
  Rng& rng() { return rng_; }

  // The context for `request`: matches from the index, as the Router computes them.
  RoutingContext Context(const RoutingRequest& request) {
    matched_ = index_.Match(request.key.block_hashes);
    matched_.resize(fleet_.size(), 0);
    return RoutingContext{.fleet = fleet_,
                          .candidates = candidates_,
                          .matched_blocks = matched_,
                          .index = index_,
                          .now = TimePoint{},
                          .rng = rng_,
                          .gateway = {}};
  }

 private:
  FleetView fleet_;
  PrefixIndex index_;
  std::vector<BackendId> candidates_;
  std::vector<int32_t> matched_;
  Rng rng_;
};

}  // namespace warmroute::routing::testing
