// Admission control: at most `max_in_flight` requests are dispatched at once (0: unlimited);
// requests beyond wait, at most `max_queue` of them and each at most `queue_timeout` (then 429:
// the fleet is saturated). A finishing request hands its slot straight to the next waiter, which
// is woken on its own thread's executor.
//
// Who gets a slot, who waits and who is refused is FairQueue's decision (fair_queue.h):
// weighted-fair queueing across tenants, a FIFO per tenant, and a full queue that pushes out the
// newest waiter of the tenant with the largest weighted queue rather than refuse a tenant below
// its share. The gate keeps the waiters' timers and wakes them as the queue decides.
//
// Usage (in a handler coroutine):
//   absl::StatusOr<AdmissionGate::Ticket> ticket = co_await gate.Admit("acme", /*weight=*/1);
//   if (!ticket.ok()) reply 429;            // ResourceExhausted
//   ... the ticket's destructor releases the slot ...
//
// Thread-safety: thread-safe; Admit runs on the caller's executor.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "gateway/tenancy/fair_queue.h"
#include "net/task.h"

namespace warmroute::gateway {

struct AdmissionOptions {
  int64_t max_in_flight = 0;  // 0: unlimited (no queue)
  int64_t max_queue = 1024;
  std::chrono::milliseconds queue_timeout{30'000};
};

class AdmissionGate {
 public:
  explicit AdmissionGate(AdmissionOptions options);
  AdmissionGate(const AdmissionGate&) = delete;
  AdmissionGate& operator=(const AdmissionGate&) = delete;

  // Releases its slot on destruction (moves transfer it).
  class Ticket {
   public:
    Ticket() = default;
    explicit Ticket(AdmissionGate* gate) : gate_(gate) {}
    Ticket(Ticket&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
    Ticket& operator=(Ticket&& other) noexcept;
    ~Ticket();

   private:
    AdmissionGate* gate_ = nullptr;
  };

  // A slot, or ResourceExhausted: the queue was full (on arrival, or the request was pushed
  // out), or the wait reached queue_timeout (IsQueueTimeout tells them apart, for the rejection
  // metric's label). `tenant` names the queue; `weight` > 0 its share.
  net::Task<absl::StatusOr<Ticket>> Admit(std::string tenant = "", double weight = 1);

  // False when requests are never queued (max_in_flight 0: Admit hands out a ticket at once).
  bool bounded() const { return options_.max_in_flight > 0; }

  int64_t in_flight() const;
  int64_t queued() const;

 private:
  struct Waiter;
  void Release();
  // Removes `id` from waiters_ and returns it; call with mu_ held.
  // REQUIRES: `id` is in waiters_.
  std::shared_ptr<Waiter> TakeWaiterLocked(FairQueue::WaiterId id);
  // Ends `waiter`'s wait on its own executor; it then reads why (granted, pushed out, or
  // neither: timed out) under mu_.
  static void Wake(std::shared_ptr<Waiter> waiter);

  const AdmissionOptions options_;
  mutable std::mutex mu_;
  FairQueue queue_;  // guarded by mu_; unused when max_in_flight is 0 (unlimited)
  // The waiters the queue holds, by id; guarded by mu_.
  absl::flat_hash_map<FairQueue::WaiterId, std::shared_ptr<Waiter>> waiters_;
};

// True when `status` is Admit's refusal after waiting queue_timeout (false: the queue was full).
bool IsQueueTimeout(const absl::Status& status);

}  // namespace warmroute::gateway
