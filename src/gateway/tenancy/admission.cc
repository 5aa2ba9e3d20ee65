#include "gateway/tenancy/admission.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace warmroute::gateway {

namespace asio = boost::asio;
using Timer = asio::basic_waitable_timer<std::chrono::steady_clock,
                                         asio::wait_traits<std::chrono::steady_clock>,
                                         net::Executor>;

namespace {
constexpr char kQueueTimeoutPayload[] = "warmroute.admission.queue_timeout";
}  // namespace

bool IsQueueTimeout(const absl::Status& status) {
  return status.GetPayload(kQueueTimeoutPayload).has_value();
}

struct AdmissionGate::Waiter {
  explicit Waiter(net::Executor executor) : timer(executor) {}
  Timer timer;
  bool granted = false;     // guarded by the gate's mutex
  bool pushed_out = false;  // guarded by the gate's mutex
};

namespace {

absl::Status QueueFull(const AdmissionOptions& options) {
  return absl::ResourceExhaustedError(
      absl::StrCat("the gateway's admission queue is full (", options.max_queue,
                   " requests waiting for one of ", options.max_in_flight, " slots); retry later"));
}

}  // namespace

// With max_in_flight 0 (unlimited) the queue is never asked: one slot keeps it valid.
AdmissionGate::AdmissionGate(AdmissionOptions options)
    : options_(options), queue_(std::max<int64_t>(options.max_in_flight, 1), options.max_queue) {}

AdmissionGate::Ticket& AdmissionGate::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    if (gate_) gate_->Release();
    gate_ = std::exchange(other.gate_, nullptr);
  }
  return *this;
}

AdmissionGate::Ticket::~Ticket() {
  if (gate_) gate_->Release();
}

net::Task<absl::StatusOr<AdmissionGate::Ticket>> AdmissionGate::Admit(std::string tenant,
                                                                        double weight) {
  if (options_.max_in_flight <= 0) co_return Ticket();
  const net::Executor executor = co_await asio::this_coro::executor;
  std::shared_ptr<Waiter> waiter;
  FairQueue::WaiterId id = 0;
  {
    std::lock_guard lock(mu_);
    const FairQueue::Arrival arrival = queue_.Arrive(tenant, weight);
    switch (arrival.outcome) {
      case FairQueue::Arrival::Outcome::kAdmitted:
        co_return Ticket(this);
      case FairQueue::Arrival::Outcome::kRefused:
        co_return QueueFull(options_);
      case FairQueue::Arrival::Outcome::kQueued:
        break;
    }
    if (arrival.pushed_out) {
      std::shared_ptr<Waiter> victim = TakeWaiterLocked(*arrival.pushed_out);
      victim->pushed_out = true;
      Wake(std::move(victim));
    }
    id = arrival.waiter;
    waiter = std::make_shared<Waiter>(executor);
    waiter->timer.expires_after(options_.queue_timeout);
    waiters_.emplace(id, waiter);
  }
  // Woken by Release (which cancels the timer), by a push-out, or by the timeout. Cancellation
  // of this coroutine (the client left) also completes the wait: the waiter is withdrawn below.
  co_await waiter->timer.async_wait(asio::as_tuple(asio::use_awaitable_t<net::Executor>{}));
  std::lock_guard lock(mu_);
  if (waiter->granted) co_return Ticket(this);  // the slot was handed over
  if (waiter->pushed_out) co_return QueueFull(options_);
  queue_.Withdraw(id);
  waiters_.erase(id);
  absl::Status timed_out = absl::ResourceExhaustedError(
      absl::StrCat("no capacity within the admission queue timeout of ",
                   options_.queue_timeout.count(), " ms; retry later"));
  timed_out.SetPayload(kQueueTimeoutPayload, absl::Cord());
  co_return timed_out;
}

void AdmissionGate::Wake(std::shared_ptr<Waiter> waiter) {
  asio::post(waiter->timer.get_executor(), [waiter] { waiter->timer.cancel(); });
}

std::shared_ptr<AdmissionGate::Waiter> AdmissionGate::TakeWaiterLocked(FairQueue::WaiterId id) {
  auto it = waiters_.find(id);
  std::shared_ptr<Waiter> waiter = std::move(it->second);
  waiters_.erase(it);
  return waiter;
}

void AdmissionGate::Release() {
  std::shared_ptr<Waiter> next;
  {
    std::lock_guard lock(mu_);
    const std::optional<FairQueue::WaiterId> id = queue_.Release();
    if (!id) return;  // the slot is free
    next = TakeWaiterLocked(*id);
    next->granted = true;  // the slot moves to it
  }
  Wake(std::move(next));
}

int64_t AdmissionGate::in_flight() const {
  std::lock_guard lock(mu_);
  return queue_.in_flight();
}

int64_t AdmissionGate::queued() const {
  std::lock_guard lock(mu_);
  return queue_.queued();
}

}  // namespace warmroute::gateway
