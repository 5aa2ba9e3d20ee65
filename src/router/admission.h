// Admission control: at most `max_in_flight` requests are dispatched at once (0: unlimited);
// requests beyond wait in one FIFO queue shared by every worker thread, at most `max_queue` of
// them (the next gets 429) and each at most `queue_timeout` (then 429 too: the fleet is
// saturated). A finishing request hands its slot straight to the oldest waiter, which is woken on
// its own thread's executor.
//
// Usage (in a handler coroutine):
//   absl::StatusOr<AdmissionGate::Ticket> ticket = co_await gate.Admit();
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

#include "absl/status/statusor.h"
#include "net/response_writer.h"

namespace warmroute::router {

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

  // A slot, or ResourceExhausted: the queue was full on arrival, or the wait reached
  // queue_timeout (IsQueueTimeout tells them apart, for the rejection metric's label).
  net::Task<absl::StatusOr<Ticket>> Admit();

  int64_t in_flight() const;
  int64_t queued() const;

 private:
  struct Waiter;
  void Release();

  const AdmissionOptions options_;
  mutable std::mutex mu_;
  int64_t in_flight_ = 0;
  std::deque<std::shared_ptr<Waiter>> waiters_;
};

// True when `status` is Admit's refusal after waiting queue_timeout (false: the queue was full).
bool IsQueueTimeout(const absl::Status& status);

}  // namespace warmroute::router
