// The gateway's control loop over its backends, on one io_context:
// - active health probes: GET /health every probe_interval, failed on a non-200 or no answer
//   within probe_timeout (Backends::OnProbe);
// - engine metrics scraping: GET /metrics every scrape_interval (0: off), read with the
//   backend's engine kind (engine_metrics.h) into Backends::OnMetrics — load for the policies,
//   and the KV capacity that sizes the backend's prefix-index slice;
// - model discovery: a backend configured without models is asked GET /v1/models once it is up,
//   for the gateway's own /v1/models and routing by model; again after its probe fails and
//   succeeds again (a restart may serve other models), and every probe interval while it
//   answers without a model list.
// Each backend has at most one probe and one scrape outstanding; a slow backend delays only its
// own. Failures are logged once per change of state, not per attempt.
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
  struct BackendPoll;
  net::Task<void> Loop();
  net::Task<void> Probe(std::shared_ptr<const BackendTarget> target, BackendPoll* poll);
  net::Task<void> Scrape(std::shared_ptr<const BackendTarget> target, BackendPoll* poll);
  net::Task<void> DiscoverModels(std::shared_ptr<const BackendTarget> target, BackendPoll* poll);

  net::Executor executor_;
  Backends& backends_;
  const Clock& clock_;
  PollerOptions options_;
  bool stopped_ = false;
  absl::flat_hash_map<std::string, std::unique_ptr<BackendPoll>> polls_;  // by address
};

}  // namespace warmroute::gateway
