// Who gets an admission slot, without I/O: the decisions of AdmissionGate (admission.h), which
// keeps the waiters' timers and wakes them.
//
// At most `max_in_flight` slots are held at once; arrivals beyond wait, at most `max_queue` of
// them. A finishing holder hands its slot straight to the next waiter.
// Weighted-fair queueing across tenants (start-time fair queueing with unit cost): each tenant
// has a FIFO queue and a virtual time; a freed slot goes to the waiting tenant with the smallest
// virtual time (on a tie, the one whose oldest waiter arrived first), which then advances by
// 1/weight. A tenant that starts waiting begins at the current virtual time (it cannot bank
// credit while idle). So under saturation tenants get slots in proportion to their weights
// whatever their arrival rates: a flood from one tenant lengthens its own queue, not the others'
// wait. With one tenant (no tenancy) this is a plain FIFO.
// A full queue pushes out rather than refuses when the arriving tenant holds less than its
// weighted share of the queue: the newest waiter of the tenant with the largest weighted queue
// (waiters / weight; on a tie, the tenant whose newest waiter arrived last) is refused instead,
// so a flooder cannot fill the queue and lock the others out.
//
// Usage:
//   FairQueue queue(/*max_in_flight=*/8, /*max_queue=*/1024);
//   FairQueue::Arrival a = queue.Arrive("acme", /*weight=*/1);
//   // kAdmitted: holds a slot. kRefused: the queue is full.
//   // kQueued: waits as a.waiter; a.pushed_out, when set, lost its place (refuse it).
//   std::optional<FairQueue::WaiterId> next = queue.Release();  // a holder finished
//   // next, when set, now holds the freed slot.
//   queue.Withdraw(id);  // a waiter gave up (timed out, or its client left)
//
// Thread-safety: none; the owner serialises calls (AdmissionGate: under its mutex).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"

namespace warmroute::gateway {

// Invariants: queued() <= max_queue; in_flight() <= max_in_flight; queued() > 0 only while
// in_flight() == max_in_flight (a freed slot goes to a waiter when there is one); each waiting
// id is in exactly one tenant's queue, and a tenant's queue is in arrival (id) order.
class FairQueue {
 public:
  // Waiters are numbered in arrival order, from 0; an id is never reused.
  using WaiterId = uint64_t;

  struct Arrival {
    enum class Outcome {
      kAdmitted,  // holds a slot now
      kQueued,    // waits as `waiter`
      kRefused,   // the queue is full and the tenant holds at least its share of it
    };
    Outcome outcome = Outcome::kAdmitted;
    WaiterId waiter = 0;  // kQueued
    // kQueued: the waiter that was pushed out to make room (no longer waiting: refuse it).
    std::optional<WaiterId> pushed_out;
  };

  // REQUIRES: max_in_flight > 0; max_queue >= 0.
  FairQueue(int64_t max_in_flight, int64_t max_queue);
  FairQueue(const FairQueue&) = delete;
  FairQueue& operator=(const FairQueue&) = delete;

  // A request of `tenant`, whose share is `weight`, arrives. It holds a slot at once when one is
  // free and nobody waits. The tenant's weight is the one of its latest arrival (at least 1e-6).
  // REQUIRES: weight > 0.
  Arrival Arrive(std::string_view tenant, double weight);

  // A slot's holder finished. Returns the waiter that now holds the slot (no longer waiting), or
  // nullopt when nobody waits (the slot is free).
  // REQUIRES: in_flight() > 0.
  std::optional<WaiterId> Release();

  // `waiter` stops waiting. Returns false when it was not waiting (granted a slot, pushed out or
  // withdrawn before): nothing changes then.
  bool Withdraw(WaiterId waiter);

  int64_t in_flight() const { return in_flight_; }
  int64_t queued() const { return static_cast<int64_t>(waiting_.size()); }

 private:
  struct Flow {
    std::deque<WaiterId> waiters;  // in arrival order
    double virtual_time = 0;
    double weight = 1;
  };
  // Makes room for one waiter of `arriving` by pushing out the newest waiter of the tenant with
  // the largest weighted queue; nullopt (nothing changes) when that is `arriving` or `arriving`
  // would then hold at least as large a weighted queue.
  std::optional<WaiterId> PushOut(const Flow& arriving);

  const int64_t max_in_flight_;
  const int64_t max_queue_;
  int64_t in_flight_ = 0;
  double virtual_clock_ = 0;  // the start time of the last slot handed over
  WaiterId next_waiter_ = 0;
  // By tenant; kept while idle, so a tenant's virtual time survives its idle periods. Nodes:
  // `waiting_` points into it.
  absl::node_hash_map<std::string, Flow> flows_;
  absl::flat_hash_map<WaiterId, Flow*> waiting_;  // each waiter's tenant
};

}  // namespace warmroute::gateway
