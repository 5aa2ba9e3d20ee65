// The gateway's control loop over its backends, on one io_context. Every tick (20 ms) it asks
// PollSchedule (poll_schedule.h) which polls start, performs them, and reports their outcomes
// back; the schedule decides when (intervals, at most one of each outstanding per backend) and
// which outcomes are logged (once per change of state, not per attempt).
// - health probes: GET /health on a new connection, failed on a non-200 or no answer within
//   probe_timeout (Backends::OnProbe);
// - engine metrics scrapes: GET /metrics, read with the backend's engine kind
//   (engine_metrics.h) into Backends::OnMetrics — load for the policies, and the KV capacity
//   that sizes the backend's prefix-index slice;
// - model discovery: GET /v1/models of a backend configured without models
//   (Backends::OnModelsDiscovered), for the gateway's own /v1/models and routing by model.
//
// Thread-safety: Start/Stop/SetOptions on the poller's io_context thread (or before it runs).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "common/clock.h"
#include "gateway/fleet/backends.h"
#include "gateway/fleet/poll_schedule.h"
#include "net/http1/http_client.h"

namespace warmroute::gateway {

class Poller {
 public:
  Poller(net::Executor executor, Backends& backends, const Clock& clock, PollerOptions options);
  ~Poller();
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;

  void Start();
  void Stop();
  void SetOptions(PollerOptions options) { options_ = options; }

 private:
  struct Connections;
  net::Task<void> Loop();
  // Spawns the poll `kind` of `target`.
  void Spawn(PollKind kind, std::shared_ptr<const BackendTarget> target);
  net::Task<void> Probe(std::shared_ptr<const BackendTarget> target, Connections* connections);
  net::Task<void> Scrape(std::shared_ptr<const BackendTarget> target, Connections* connections);
  net::Task<void> DiscoverModels(std::shared_ptr<const BackendTarget> target,
                                 Connections* connections);

  net::Executor executor_;
  Backends& backends_;
  const Clock& clock_;
  PollerOptions options_;
  bool stopped_ = false;
  PollSchedule schedule_;
  // By address, as the schedule keeps its state: made and dropped when it says.
  absl::flat_hash_map<std::string, std::unique_ptr<Connections>> connections_;
};

}  // namespace warmroute::gateway
