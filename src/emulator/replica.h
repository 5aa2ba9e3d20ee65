// One emulated engine replica on real time: an engine::EngineCore driven by a timer-paced step
// loop, its Prometheus metrics and (optionally) its KV-event publisher.
//
// The step loop: Step() the core, wait until the step's end on the wall clock (duration ×
// time_scale, paced by StepPacer so lateness never accumulates), then deliver the step's events
// to the waiting requests, update the metrics, publish the KV events, and continue while the core
// has work; when idle, the next Submit() starts a step at once. TTFT, inter-token and end-to-end
// latencies are recorded at delivery, in emulated seconds (wall / time_scale).
//
// Usage (on the replica's io_context thread):
//   Replica replica(io.get_executor(), options, generator, /*kv_events=*/nullptr);
//   replica.Start();
//   EngineRequest r = ...; r.id = replica.NewRequestId();
//   absl::StatusOr<RequestHandle> handle = replica.Submit(std::move(r));
//   for (;;) {
//     std::vector<RequestEvent> events = co_await handle->NextEvents();  // tokens, then finish
//     ...
//   }
//
// This is an I/O driver: it reads the real steady clock (as its timers do); the simulator
// drives EngineCore on virtual time instead.
// Thread-safety: every method, and every RequestHandle, is used on the thread running the
// executor's io_context (one thread per io_context).
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/engine/engine_core.h"
#include "emulator/kv_event_publisher.h"
#include "emulator/replica_metrics.h"
#include "emulator/step_pacer.h"
#include "net/task.h"

namespace warmroute::emulator {

struct ReplicaOptions {
  // Engine index (the metrics' `engine` label, logs): replica i's data-parallel rank r of N is
  // engine i * N + r, as vLLM numbers the engines of a data-parallel deployment.
  int index = 0;
  std::string model;              // served model name
  engine::EngineConfig config;    // KV capacity, batch limits, max_model_len
  engine::TimingProfile profile;  // a copy: the caller may have switched jitter off
  double time_scale = 1.0;        // wall seconds per emulated second. REQUIRES: > 0
  uint64_t seed = 0;              // engine jitter seed and default generated-text seeds
};

struct InflightRequest;
class Replica;

// A request admitted to a replica. Move-only. Destroying it before the request finished aborts
// the request in the engine (its blocks are freed; its full blocks stay cached).
class RequestHandle {
 public:
  RequestHandle(RequestHandle&& other) noexcept;
  RequestHandle& operator=(RequestHandle&& other) noexcept;
  RequestHandle(const RequestHandle&) = delete;
  RequestHandle& operator=(const RequestHandle&) = delete;
  ~RequestHandle();

  uint64_t id() const;

  // Waits until the request has undelivered events and returns all of them in order: kToken
  // events (output_index 0, 1, ...), then one kFinished. Returns an empty vector once the
  // request finished or the replica stopped. If the awaiting coroutine is cancelled (the client
  // went away), throws boost::system::system_error(operation_aborted).
  net::Task<std::vector<engine::RequestEvent>> NextEvents();

 private:
  friend class Replica;
  RequestHandle(Replica* replica, std::shared_ptr<InflightRequest> state);
  void Release();

  Replica* replica_ = nullptr;
  std::shared_ptr<InflightRequest> state_;
};

class Replica {
 public:
  // `generator` must outlive the replica. `kv_events` may be null (no KV events).
  Replica(net::Executor executor, ReplicaOptions options, const engine::TokenGenerator& generator,
          std::unique_ptr<KvEventPublisher> kv_events);
  ~Replica();
  Replica(const Replica&) = delete;
  Replica& operator=(const Replica&) = delete;

  // Starts the step loop. Call once.
  void Start();

  // Stops the step loop; waiting requests get an empty NextEvents(). Idempotent.
  void Stop();

  // A fresh request id, unique within this replica.
  uint64_t NewRequestId() { return next_request_id_++; }

  // Queues `request` in the engine (request.id from NewRequestId()). Errors are EngineCore::Add's
  // (InvalidArgument naming the parameter: too long for max_model_len or for the whole KV
  // cache), or Unavailable after Stop().
  absl::StatusOr<RequestHandle> Submit(engine::EngineRequest request);

  // Evicts every cached block (vLLM's /reset_prefix_cache) and publishes AllBlocksCleared.
  // FailedPrecondition, changing nothing, while requests hold blocks.
  absl::Status ResetPrefixCache();

  // The Prometheus text of this replica's metrics, with the engine's current gauges.
  std::string MetricsText();
  // This replica's metrics, the gauges brought up to the engine's current state.
  const ReplicaMetrics& UpdatedMetrics();
  // The engine's current counters and queue lengths.
  engine::EngineStats Stats() const { return core_.Stats(); }

  const ReplicaOptions& options() const { return options_; }
  const engine::EngineConfig& config() const { return options_.config; }
  const engine::TokenGenerator& generator() const { return generator_; }
  // Requests submitted and neither finished nor aborted.
  size_t num_in_flight() const { return inflight_.size(); }
  // The bound KV-event endpoint, or empty.
  std::string kv_events_endpoint() const;

 private:
  friend class RequestHandle;
  using Timer =
      boost::asio::basic_waitable_timer<std::chrono::steady_clock,
                                        boost::asio::wait_traits<std::chrono::steady_clock>,
                                        net::Executor>;

  net::Task<void> RunSteps();
  // Hands the step's events to their requests at wall time `now`.
  void Deliver(const engine::StepOutput& out, TimePoint now);
  void Abort(uint64_t id);
  void Publish(const std::vector<engine::KvEvent>& events);

  net::Executor executor_;
  const ReplicaOptions options_;
  const engine::TokenGenerator& generator_;
  engine::EngineCore core_;
  ReplicaMetrics metrics_;
  std::unique_ptr<KvEventPublisher> kv_events_;
  StepPacer pacer_;
  Timer wake_;        // the idle loop waits on it; Submit() cancels it
  Timer step_timer_;  // the end of the current step
  bool waiting_for_work_ = false;
  // The step in progress (between Step() and the delivery of its events), for the intended TTFT
  // of requests that arrive during it.
  bool in_step_ = false;
  TimePoint step_ideal_end_{};
  Duration step_emulated_{0};
  bool started_ = false;
  bool stopped_ = false;
  uint64_t next_request_id_ = 1;
  absl::flat_hash_map<uint64_t, std::shared_ptr<InflightRequest>> inflight_;
};

}  // namespace warmroute::emulator
