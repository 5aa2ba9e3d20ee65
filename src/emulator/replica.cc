#include "emulator/replica.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"

namespace warmroute::emulator {
namespace {

namespace asio = boost::asio;
constexpr auto kTask = asio::as_tuple(asio::use_awaitable_t<net::Executor>{});

TimePoint Now() { return std::chrono::steady_clock::now(); }

double UnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

// The delivery state of one request, shared by the replica (which appends events) and its
// RequestHandle (which consumes them).
struct InflightRequest {
  InflightRequest(net::Executor executor, uint64_t id, TimePoint arrival)
      : id(id), arrival(arrival), notify(executor, Timer::time_point::max()) {}

  using Timer =
      boost::asio::basic_waitable_timer<std::chrono::steady_clock,
                                        boost::asio::wait_traits<std::chrono::steady_clock>,
                                        net::Executor>;

  const uint64_t id;
  const TimePoint arrival;
  // The TTFT the timing model intends, accumulated in emulated time: the rest of the step in
  // progress at arrival, plus every later step until the one that yields the first token. It
  // equals (ideal end of that step − arrival) when the step loop keeps up, and stays the
  // model's answer when it falls behind, so measured / intended is the emulator's accuracy.
  Duration intended_ttft{0};
  bool first_token = false;
  TimePoint last_token{};
  std::vector<engine::RequestEvent> pending;
  Timer notify;           // the consumer waits on it; cancelled when events arrive
  bool finished = false;  // kFinished was delivered (the engine no longer holds the request)
  bool closed = false;    // the replica stopped
};

// ---- RequestHandle ----

RequestHandle::RequestHandle(Replica* replica, std::shared_ptr<InflightRequest> state)
    : replica_(replica), state_(std::move(state)) {}

RequestHandle::RequestHandle(RequestHandle&& other) noexcept
    : replica_(std::exchange(other.replica_, nullptr)), state_(std::move(other.state_)) {}

RequestHandle& RequestHandle::operator=(RequestHandle&& other) noexcept {
  if (this != &other) {
    Release();
    replica_ = std::exchange(other.replica_, nullptr);
    state_ = std::move(other.state_);
  }
  return *this;
}

RequestHandle::~RequestHandle() { Release(); }

void RequestHandle::Release() {
  if (replica_ != nullptr && state_ != nullptr && !state_->finished && !state_->closed) {
    replica_->Abort(state_->id);
  }
  replica_ = nullptr;
  state_.reset();
}

uint64_t RequestHandle::id() const { return state_->id; }

net::Task<std::vector<engine::RequestEvent>> RequestHandle::NextEvents() {
  InflightRequest& state = *state_;
  while (state.pending.empty()) {
    if (state.finished || state.closed) co_return std::vector<engine::RequestEvent>{};
    state.notify.expires_at(InflightRequest::Timer::time_point::max());
    co_await state.notify.async_wait(kTask);
    // Woken with nothing to deliver: not by the replica, so by cancellation of this coroutine.
    if (state.pending.empty() && !state.closed) {
      throw boost::system::system_error(asio::error::operation_aborted);
    }
  }
  co_return std::exchange(state.pending, {});
}

// ---- Replica ----

Replica::Replica(net::Executor executor, ReplicaOptions options,
                 const engine::TokenGenerator& generator,
                 std::unique_ptr<KvEventPublisher> kv_events)
    : executor_(executor),
      options_(std::move(options)),
      generator_(generator),
      core_(options_.config, options_.profile, generator, options_.seed),
      metrics_(options_.model, options_.index, options_.config),
      kv_events_(std::move(kv_events)),
      pacer_(options_.time_scale),
      wake_(executor, Timer::time_point::max()),
      step_timer_(executor) {
  metrics_.Update(core_.Stats());
}

Replica::~Replica() = default;

void Replica::Start() {
  if (started_) return;
  started_ = true;
  asio::co_spawn(executor_, RunSteps(), [index = options_.index](std::exception_ptr e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      spdlog::error("replica {}: step loop failed: {}", index, ex.what());
    }
  });
}

void Replica::Stop() {
  if (stopped_) return;
  stopped_ = true;
  wake_.cancel();
  step_timer_.cancel();
  if (kv_events_) kv_events_->Stop();  // its replay socket's wait would keep the loop running
  for (auto& [id, request] : inflight_) {
    request->closed = true;
    request->notify.cancel();
  }
  inflight_.clear();
}

absl::StatusOr<RequestHandle> Replica::Submit(engine::EngineRequest request) {
  if (stopped_) return absl::UnavailableError("the engine is shutting down");
  const uint64_t id = request.id;
  absl::Status added = core_.Add(std::move(request));
  if (!added.ok()) return added;
  auto state = std::make_shared<InflightRequest>(executor_, id, Now());
  if (in_step_) {
    // Admitted by the next step at the earliest: it waits for the rest of this one.
    const Duration rest_wall = std::max(Duration{0}, step_ideal_end_ - state->arrival);
    state->intended_ttft = std::min(step_emulated_, FromSeconds(pacer_.EmulatedSeconds(rest_wall)));
  }
  inflight_[id] = state;
  metrics_.Update(core_.Stats());
  if (waiting_for_work_) wake_.cancel();
  return RequestHandle(this, std::move(state));
}

void Replica::Abort(uint64_t id) {
  inflight_.erase(id);
  if (stopped_) return;
  if (core_.Abort(id)) metrics_.Update(core_.Stats());
}

absl::Status Replica::ResetPrefixCache() {
  std::vector<engine::KvEvent> events;
  if (!core_.ResetPrefixCache(&events)) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot reset the prefix cache while requests hold KV blocks (",
                     inflight_.size(), " requests in flight); retry when the engine is idle"));
  }
  Publish(events);
  metrics_.Update(core_.Stats());
  return absl::OkStatus();
}

std::string Replica::MetricsText() { return UpdatedMetrics().Serialize(); }

const ReplicaMetrics& Replica::UpdatedMetrics() {
  metrics_.Update(core_.Stats());
  return metrics_;
}

std::string Replica::kv_events_endpoint() const {
  return kv_events_ ? kv_events_->endpoint() : std::string();
}

void Replica::Publish(const std::vector<engine::KvEvent>& events) {
  if (kv_events_ && !events.empty()) kv_events_->Publish(UnixSeconds(), events);
}

net::Task<void> Replica::RunSteps() {
  while (!stopped_) {
    if (!core_.HasWork()) {
      pacer_.Idle();
      waiting_for_work_ = true;
      wake_.expires_at(Timer::time_point::max());
      co_await wake_.async_wait(kTask);
      waiting_for_work_ = false;
      continue;
    }
    const TimePoint start = pacer_.NextStart(Now());
    engine::StepOutput out = core_.Step();
    const TimePoint end = pacer_.EndOf(start, out.duration);
    // Requests already waiting take part in this step (intended TTFT accounting).
    for (auto& [id, request] : inflight_) {
      if (!request->first_token) request->intended_ttft += out.duration;
    }
    in_step_ = true;
    step_ideal_end_ = end;
    step_emulated_ = out.duration;
    step_timer_.expires_at(end);
    co_await step_timer_.async_wait(kTask);
    in_step_ = false;
    if (stopped_) break;
    pacer_.Finished(end);
    Deliver(out, Now());
    metrics_.Update(core_.Stats());
    Publish(out.kv_events);
  }
}

void Replica::Deliver(const engine::StepOutput& out, TimePoint now) {
  for (const engine::RequestEvent& event : out.events) {
    if (event.kind == engine::RequestEvent::Kind::kPreempted) continue;  // invisible to clients
    auto it = inflight_.find(event.id);
    if (it == inflight_.end()) continue;  // aborted during the step
    InflightRequest& request = *it->second;
    if (event.kind == engine::RequestEvent::Kind::kToken) {
      if (event.output_index == 0) {
        metrics_.ObserveTimeToFirstToken(pacer_.EmulatedSeconds(now - request.arrival));
        metrics_.ObserveIntendedTimeToFirstToken(ToSeconds(request.intended_ttft));
        request.first_token = true;
      } else {
        metrics_.ObserveInterTokenLatency(pacer_.EmulatedSeconds(now - request.last_token));
      }
      request.last_token = now;
    }
    request.pending.push_back(event);
    request.notify.cancel();
    if (event.kind == engine::RequestEvent::Kind::kFinished) {
      metrics_.ObserveEndToEndLatency(pacer_.EmulatedSeconds(now - request.arrival));
      request.finished = true;
      inflight_.erase(it);
    }
  }
}

}  // namespace warmroute::emulator
