// Prewarm and handoff in the live gateway: the owner of a routing::PrewarmPlanner
// (core/routing/prewarm_planner.h has the rule, its parameters and why), fed with the requests
// the gateway routes and the fleet's membership changes, and a control-loop task that sends the
// planned requests.
//
// - Observing (request path, every worker thread): Count() before a prompt request is routed
//   counts it in its prefix's rate; only when the planner asks for a new sample of the prefix (its
//   second request, or its sample older than kSampleRefresh) does the caller copy the request
//   and Keep() the body as sent upstream (with the tenant's cache_salt, the LoRA name in `model`)
//   once routed. Count takes the prewarmer's lock with try_lock: a request that finds it held is
//   not counted (a sample of the traffic, never a wait on the request path). Prompts are kept in
//   memory only, never logged.
// - Membership: whatever adds or removes backends (the admin API, a config reload, discovery)
//   calls OnJoined(name) after Backends::Add and OnLeaving(name) before Backends::Remove or
//   after Backends::SetDraining(name, true). A join is planned once the backend is eligible
//   (an added backend waits for its first probe), or dropped after max_wait; a handoff is planned
//   at once, while the Router still knows what the leaving backend holds.
// - Sending (the control io_context): every kTick the loop asks the planner for the jobs its
//   pacing lets out (max_in_flight, max_tokens_per_s, the target's queued prefill), routes each
//   through Backends pinned to its target (so the Router's index learns the target holds the
//   prefix), and POSTs the sample's body edited to max_tokens 1, not streamed, to the same API
//   path, on the gateway's upstream connection pools (gateway/proxy/upstream_pools.h). Prewarm
//   requests are not client traffic: they are not in warmroute_requests_total nor in the hit-rate
//   counters, only in warmroute_prewarm_requests_total / warmroute_prewarm_tokens_total.
//
// Usage:
//   Prewarmer prewarmer(control_executor, backends, metrics, clock, next_request_id, options);
//   prewarmer.Start();                                   // on the control thread
//   if (prewarmer.Count(routing)) { kept = routing; }    // request path, before Route
//   prewarmer.Keep(kept, endpoint, body.For(kind));      // once routed
//   backends.Add(config); prewarmer.OnJoined(config.name);
//   prewarmer.OnLeaving(name); backends.Remove(name);
//
// Thread-safety: Count, Keep, OnJoined, OnLeaving and counters() from any thread; Start and Stop
// on the control thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "core/request/inference_request.h"
#include "core/routing/prewarm_planner.h"
#include "gateway/fleet/backends.h"
#include "gateway/observability/gateway_metrics.h"
#include "gateway/proxy/upstream_pools.h"
#include "net/http1/http_client.h"
#include "net/task.h"

namespace warmroute::gateway {

// What a prewarm request sends: the API path and the body (a client's, as sent upstream, edited
// by PrewarmBody).
struct PrewarmSample {
  std::string path;
  std::string body;
};

// `body` (a JSON object) asking for one token, not streamed: max_tokens 1 (and
// max_completion_tokens 1 when the body sets it), stream false, stream_options null.
// InvalidArgument when `body` is not a JSON object.
absl::StatusOr<std::string> PrewarmBody(std::string_view body);

// The API path a prompt of `endpoint` is prewarmed with ("" for the endpoints not prewarmed:
// only chat completions and completions are, whose max_tokens every engine honours).
std::string_view PrewarmPath(request::Endpoint endpoint);

class Prewarmer {
 public:
  // How often the control loop looks for jobs and joins to plan.
  static constexpr std::chrono::milliseconds kTick{50};
  // A prefix's sample is replaced by a request at least this much later.
  static constexpr std::chrono::seconds kSampleRefresh{10};
  // A prefix is sampled from its second request on: a prompt seen once is copied never.
  static constexpr int kMinSampleRequests = 2;

  Prewarmer(net::Executor executor, Backends& backends, GatewayMetrics& metrics, const Clock& clock,
            std::atomic<uint64_t>& next_request_id, routing::PrewarmOptions options,
            net::UpstreamTimeouts timeouts);
  ~Prewarmer();
  Prewarmer(const Prewarmer&) = delete;
  Prewarmer& operator=(const Prewarmer&) = delete;

  void Start();
  void Stop();

  // Request path (see above).
  bool Count(const routing::RoutingRequest& request);
  void Keep(const routing::RoutingRequest& request, request::Endpoint endpoint,
            std::string_view upstream_body);

  // Membership (see above). Unknown names are ignored.
  void OnJoined(const std::string& name);
  void OnLeaving(const std::string& name);

  routing::PrewarmCounters counters() const;

 private:
  using Planner = routing::PrewarmPlanner<std::shared_ptr<const PrewarmSample>>;
  struct PendingJoin {
    std::string name;
    TimePoint deadline;
  };

  net::Task<void> Loop();
  // Plans the joins whose backend became eligible and takes the jobs pacing lets out; call with
  // mu_ held.
  std::vector<Planner::Job> TickLocked(TimePoint now);
  net::Task<void> Send(Planner::Job job);

  net::Executor executor_;
  Backends& backends_;
  GatewayMetrics& metrics_;
  const Clock& clock_;
  std::atomic<uint64_t>& next_request_id_;
  const net::UpstreamTimeouts timeouts_;
  UpstreamPools pools_;  // the control thread's
  bool stopped_ = false;

  mutable std::mutex mu_;  // guards what follows
  Planner planner_;
  std::vector<PendingJoin> joins_;
};

}  // namespace warmroute::gateway
