// The parity self-test's I/O, on the gateway's control io_context: every tick (500 ms) it lists
// the (backend, model) pairs to watch — a backend that is up (or draining) and serves a model
// configured with a tokenizer, by its configured models or else the models it listed on
// GET /v1/models — asks ParitySchedule (parity_schedule.h) which checks start, performs them
// (POST /tokenize with parity_probe.h's chat and text, on a connection of its own), and reports
// the verdicts back; the schedule decides what is logged and whether each model keeps precise
// keys (ModelKeying::set_parity_ok).
// Logged: a mismatch as an error, once per pair, with the first differing position and both ids
// there; a backend without /tokenize once as info; a match after a mismatch; the first of a run
// of failed checks as a warning. Counted: warmroute_prefix_key_parity_checks_total and
// warmroute_prefix_key_precise (gateway_metrics.h). Each exchange is bounded by `timeout`, at
// least kParityTimeout (a /tokenize may queue behind an engine's other work, and a failed check
// waits kParityRetry), so a stop waits at most that long for checks under way.
//
// Thread-safety: Start/Stop/SetInterval on the io_context's thread (or before it runs).
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>

#include "common/clock.h"
#include "gateway/fleet/backends.h"
#include "gateway/keys/model_tokenizers.h"
#include "gateway/keys/parity_schedule.h"
#include "gateway/observability/gateway_metrics.h"
#include "net/task.h"

namespace warmroute::gateway {

inline constexpr std::chrono::seconds kParityTimeout{5};

class ParityProber {
 public:
  // `timeout`: health.probe_timeout_ms (kParityTimeout when shorter).
  // `models`: the models now configured (null: none, or mode approximate), read every tick.
  using ModelsSource = std::function<std::shared_ptr<const ModelTokenizers>()>;

  ParityProber(net::Executor executor, Backends& backends, const Clock& clock,
               GatewayMetrics& metrics, ModelsSource models, std::chrono::milliseconds interval,
               std::chrono::milliseconds timeout);

  void Start();
  // Ends the loop at once (its timer is cancelled); checks under way end within their timeout.
  void Stop();
  void SetInterval(std::chrono::milliseconds interval, std::chrono::milliseconds timeout) {
    interval_ = interval;
    timeout_ = std::max<std::chrono::milliseconds>(timeout, kParityTimeout);
  }

 private:
  net::Task<void> Loop();
  // Checks `model` on `target` and reports the verdict.
  net::Task<void> Check(std::shared_ptr<const BackendTarget> target,
                        std::shared_ptr<const ModelKeying> model,
                        std::shared_ptr<const ModelTokenizers> models);
  // Updates the models' parity flags and gauges from the schedule.
  void Publish(const ModelTokenizers& models);

  net::Executor executor_;
  Backends& backends_;
  const Clock& clock_;
  GatewayMetrics& metrics_;
  ModelsSource models_;
  std::chrono::milliseconds interval_;
  std::chrono::milliseconds timeout_;
  bool stopped_ = false;
  boost::asio::steady_timer::rebind_executor<net::Executor>::other timer_;
  ParitySchedule schedule_;
};

}  // namespace warmroute::gateway
