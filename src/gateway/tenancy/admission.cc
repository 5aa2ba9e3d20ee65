#include "gateway/tenancy/admission.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <algorithm>
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
  uint64_t arrival = 0;     // breaks virtual-time ties: the older head first
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

namespace {

absl::Status QueueFull(const AdmissionOptions& options) {
  return absl::ResourceExhaustedError(
      absl::StrCat("the gateway's admission queue is full (", options.max_queue,
                   " requests waiting for one of ", options.max_in_flight, " slots); retry later"));
}

}  // namespace

net::Task<absl::StatusOr<AdmissionGate::Ticket>> AdmissionGate::Admit(std::string tenant,
                                                                        double weight) {
  if (options_.max_in_flight <= 0) co_return Ticket();
  std::shared_ptr<Waiter> waiter;
  Flow* flow = nullptr;
  {
    std::lock_guard lock(mu_);
    if (in_flight_ < options_.max_in_flight && queued_ == 0) {
      ++in_flight_;
      co_return Ticket(this);
    }
    flow = &flows_[tenant];
    flow->weight = weight;
    if (queued_ >= options_.max_queue && !PushOutLocked(*flow)) co_return QueueFull(options_);
    waiter = std::make_shared<Waiter>(co_await asio::this_coro::executor);
    waiter->timer.expires_after(options_.queue_timeout);
    waiter->arrival = next_arrival_++;
    if (flow->waiters.empty()) flow->virtual_time = std::max(flow->virtual_time, virtual_clock_);
    flow->waiters.push_back(waiter);
    ++queued_;
  }
  // Woken by Release (which cancels the timer), by a push-out, or by the timeout. Cancellation
  // of this coroutine (the client left) also completes the wait: the waiter is withdrawn below.
  co_await waiter->timer.async_wait(asio::as_tuple(asio::use_awaitable_t<net::Executor>{}));
  std::lock_guard lock(mu_);
  if (waiter->granted) co_return Ticket(this);  // the slot was handed over
  if (waiter->pushed_out) co_return QueueFull(options_);
  auto& waiters = flows_[tenant].waiters;
  for (auto it = waiters.begin(); it != waiters.end(); ++it) {
    if (*it == waiter) {
      waiters.erase(it);
      --queued_;
      break;
    }
  }
  absl::Status timed_out = absl::ResourceExhaustedError(
      absl::StrCat("no capacity within the admission queue timeout of ",
                   options_.queue_timeout.count(), " ms; retry later"));
  timed_out.SetPayload(kQueueTimeoutPayload, absl::Cord());
  co_return timed_out;
}

bool AdmissionGate::PushOutLocked(const Flow& arriving) {
  Flow* longest = nullptr;
  double longest_share = 0;
  for (auto& [name, flow] : flows_) {
    if (flow.waiters.empty()) continue;
    const double share = static_cast<double>(flow.waiters.size()) / flow.weight;
    if (longest == nullptr || share > longest_share) {
      longest = &flow;
      longest_share = share;
    }
  }
  const double arriving_share = static_cast<double>(arriving.waiters.size() + 1) / arriving.weight;
  if (longest == nullptr || longest == &arriving || longest_share <= arriving_share) return false;
  std::shared_ptr<Waiter> victim = std::move(longest->waiters.back());
  longest->waiters.pop_back();
  --queued_;
  victim->pushed_out = true;
  asio::post(victim->timer.get_executor(), [victim] { victim->timer.cancel(); });
  return true;
}

void AdmissionGate::Release() {
  std::shared_ptr<Waiter> next;
  {
    std::lock_guard lock(mu_);
    Flow* chosen = nullptr;
    for (auto& [name, flow] : flows_) {
      if (flow.waiters.empty()) continue;
      if (chosen == nullptr || flow.virtual_time < chosen->virtual_time ||
          (flow.virtual_time == chosen->virtual_time &&
           flow.waiters.front()->arrival < chosen->waiters.front()->arrival)) {
        chosen = &flow;
      }
    }
    if (chosen == nullptr) {
      --in_flight_;
      return;
    }
    next = std::move(chosen->waiters.front());
    chosen->waiters.pop_front();
    --queued_;
    virtual_clock_ = chosen->virtual_time;
    chosen->virtual_time += 1.0 / chosen->weight;
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
  return queued_;
}

}  // namespace warmroute::gateway
