// Which KV-event feeds the gateway's subscriber keeps open: one per present backend that
// configures kv_events (all of its data-parallel ranks), none in approximate mode. The
// subscriber asks the fleet what it wants now (FeedSpec per backend) every few hundred
// milliseconds and the plan answers what to close and what to open:
//   - a backend no longer wanted (removed by the admin API or a reload, or its kv_events removed)
//     is closed: its sockets go, and the Router has already forgotten its slice;
//   - a backend wanted for the first time is opened: a new stream (kStarting);
//   - a backend whose spec changed (endpoint, topic, replay, ranks, block size, rank slices) is
//     closed and
//     opened again. A backend replaced by a reload has a new BackendId, so it gets a new feed.
//
// Usage:
//   SubscriptionPlan plan;
//   SubscriptionChanges c = plan.Update(wanted_specs);
//   for (BackendId b : c.close) ...;  for (const FeedSpec& s : c.open) ...;
//
// Thread-safety: none; one owner (the subscriber's thread).
#pragma once

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/routing/fleet_view.h"
#include "gateway/config/kv_events_config.h"

namespace warmroute::gateway {

struct FeedSpec {
  routing::BackendId backend = 0;
  std::string name{};  // the backend's, for logs and metrics
  KvEventsConfig kv_events{};
  int block_size = 16;
  // A backend routing its ranks: rank r's target's id at [r], rank r's events feeding its slice
  // (BackendEventFeedOptions::rank_slices). Empty: the ranks share the backend's slice.
  std::vector<routing::BackendId> rank_slices{};
  bool operator==(const FeedSpec&) const = default;
};

struct SubscriptionChanges {
  std::vector<routing::BackendId> close;  // first
  std::vector<FeedSpec> open;             // then
};

class SubscriptionPlan {
 public:
  // `wanted`: at most one spec per backend, each with kv_events enabled.
  SubscriptionChanges Update(const std::vector<FeedSpec>& wanted);
  size_t size() const { return open_.size(); }

 private:
  absl::flat_hash_map<routing::BackendId, FeedSpec> open_;
};

}  // namespace warmroute::gateway
