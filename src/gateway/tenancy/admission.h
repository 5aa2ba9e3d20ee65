// Admission control: at most `max_in_flight` requests are dispatched at once (0: unlimited);
// requests beyond wait, at most `max_queue` of them and each at most `queue_timeout` (then 429:
// the fleet is saturated). A finishing request hands its slot straight to the next waiter, which
// is woken on its own thread's executor.
//
// Weighted-fair queueing across tenants (start-time fair queueing with unit cost): each tenant
// has a FIFO queue and a virtual time; a freed slot goes to the waiting tenant with the smallest
// virtual time, which then advances by 1/weight. A tenant that starts waiting begins at the
// current virtual time (it cannot bank credit while idle). So under saturation tenants get slots
// in proportion to their weights whatever their arrival rates: a flood from one tenant lengthens
// its own queue, not the others' wait. With one tenant (no tenancy) this is a plain FIFO.
// A full queue pushes out rather than refuses when the arriving tenant holds less than its
// weighted share of the queue: the newest waiter of the tenant with the largest weighted queue
// gets the 429 instead, so a flooder cannot fill the queue and lock the others out.
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
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "net/task.h"

namespace warmroute::gateway {

struct AdmissionOptions {
  int64_t max_in_flight = 0;  // 0: unlimited (no queue)
  int64_t max_queue = 1024;
  std::chrono::milliseconds queue_timeout{30'000};
};

class AdmissionGate {
 public:
  explicit AdmissionGate(AdmissionOptions options) : options_(options) {}
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

  int64_t in_flight() const;
  int64_t queued() const;

 private:
  struct Waiter;
  struct Flow {
    std::deque<std::shared_ptr<Waiter>> waiters;
    double virtual_time = 0;
    double weight = 1;
  };
  void Release();
  // Makes room for one waiter of `arriving` by pushing out another tenant's newest waiter;
  // false when `arriving` already holds at least its share. Call with mu_ held.
  bool PushOutLocked(const Flow& arriving);

  const AdmissionOptions options_;
  mutable std::mutex mu_;
  int64_t in_flight_ = 0;
  int64_t queued_ = 0;
  double virtual_clock_ = 0;  // the start time of the last slot handed over
  uint64_t next_arrival_ = 0;
  absl::flat_hash_map<std::string, Flow> flows_;
};

// True when `status` is Admit's refusal after waiting queue_timeout (false: the queue was full).
bool IsQueueTimeout(const absl::Status& status);

}  // namespace warmroute::gateway
