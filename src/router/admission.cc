#include "router/admission.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace warmroute::router {

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
  bool granted = false;  // guarded by the gate's mutex
};

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

net::Task<absl::StatusOr<AdmissionGate::Ticket>> AdmissionGate::Admit() {
  if (options_.max_in_flight <= 0) co_return Ticket();
  std::shared_ptr<Waiter> waiter;
  {
    std::lock_guard lock(mu_);
    if (in_flight_ < options_.max_in_flight) {
      ++in_flight_;
      co_return Ticket(this);
    }
    if (static_cast<int64_t>(waiters_.size()) >= options_.max_queue) {
      co_return absl::ResourceExhaustedError(absl::StrCat(
          "the gateway's admission queue is full (", options_.max_queue,
          " requests waiting for one of ", options_.max_in_flight, " slots); retry later"));
    }
    waiter = std::make_shared<Waiter>(co_await asio::this_coro::executor);
    waiter->timer.expires_after(options_.queue_timeout);
    waiters_.push_back(waiter);
  }
  // Woken by Release (which cancels the timer) or by the timeout. Cancellation of this coroutine
  // (the client left) also completes the wait: then the waiter is withdrawn below.
  co_await waiter->timer.async_wait(asio::as_tuple(asio::use_awaitable_t<net::Executor>{}));
  std::lock_guard lock(mu_);
  if (waiter->granted) co_return Ticket(this);  // the slot was handed over
  for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
    if (*it == waiter) {
      waiters_.erase(it);
      break;
    }
  }
  absl::Status timed_out = absl::ResourceExhaustedError(
      absl::StrCat("no capacity within the admission queue timeout of ",
                   options_.queue_timeout.count(), " ms; retry later"));
  timed_out.SetPayload(kQueueTimeoutPayload, absl::Cord());
  co_return timed_out;
}

void AdmissionGate::Release() {
  std::shared_ptr<Waiter> next;
  {
    std::lock_guard lock(mu_);
    if (waiters_.empty()) {
      --in_flight_;
      return;
    }
    next = std::move(waiters_.front());
    waiters_.pop_front();
    next->granted = true;  // the slot moves to it: in_flight_ is unchanged
  }
  asio::post(next->timer.get_executor(), [next] { next->timer.cancel(); });
}

int64_t AdmissionGate::in_flight() const {
  std::lock_guard lock(mu_);
  return in_flight_;
}

int64_t AdmissionGate::queued() const {
  std::lock_guard lock(mu_);
  return static_cast<int64_t>(waiters_.size());
}

}  // namespace warmroute::router
