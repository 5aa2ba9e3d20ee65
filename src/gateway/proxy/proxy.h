// The proxy for the routed endpoints (routes.h: every path the engines serve): each request runs
// three stages and ends with a record of itself.
//
//   admit    (admit.h)    tenant → parse → prefix key → limits → admission → route: an admitted
//                         request, or a refusal sent at once
//   forward  (forward.h)  upstream attempts on the decision's backend and its alternates while
//                         nothing reached the client: an engine's answer, or an error response
//   relay    (relay.h)    the answer to the client (SSE piece by piece, or whole), closing the
//                         Router's loop with the engine-reported usage
//   record   (call_record.h)  metrics and the access log, once the request has ended however it
//                         ended (a client that went away: 499)
//
// Thread-safety: one Proxy per worker thread (it owns that thread's connection pools and Redis
// connection); what the workers share (ProxyContext) is thread-safe.
#pragma once

#include <functional>
#include <memory>

#include "common/rng.h"
#include "core/request/inference_request.h"
#include "gateway/proxy/proxy_context.h"
#include "gateway/proxy/routes.h"
#include "gateway/proxy/upstream_pools.h"
#include "gateway/tenancy/redis_rate_store.h"
#include "net/http1/http_request.h"
#include "net/http1/response_writer.h"
#include "net/task.h"

namespace warmroute::gateway {

class Proxy {
 public:
  // `context` outlives the Proxy (proxy_context.h); `seed` seeds the response ids it issues
  // (response_ids.h: from the operating system, so that ids differ across workers and replicas).
  Proxy(const ProxyContext& context, std::shared_ptr<const ProxySettings> settings,
        net::Executor executor, uint64_t seed);
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // Serves one request on `route` (REQUIRES: route.route). Worker thread only.
  net::Task<void> Handle(RouteMatch route, net::HttpRequest& request, net::ResponseWriter& writer);

  // The settings new requests get. Worker thread only.
  const std::shared_ptr<const ProxySettings>& settings() const { return settings_; }

  // Takes effect for requests that start afterwards (config reload). Worker thread only.
  void SetSettings(std::shared_ptr<const ProxySettings> settings);

  // For a stopping gateway: closes this thread's Redis connection for good (requests still
  // running fall back to local limits, as when Redis is down) and ends the pools' sweep. Its
  // reader waits on the socket for as long as the connection is open, and the sweep on its
  // timer, so without this the worker's io_context never runs out of work and the gateway never
  // exits. Worker thread only.
  void Stop();

 private:
  // Every kSweepInterval until Stop: UpstreamPools::Sweep.
  net::Task<void> SweepPools();

  const ProxyContext& context_;
  std::shared_ptr<const ProxySettings> settings_;
  net::Executor executor_;
  UpstreamPools pools_;
  Rng response_ids_;
  std::unique_ptr<RedisRateStore> redis_;  // this thread's connection; null: local limits
  bool stopped_ = false;                   // Stop() was called: no Redis connection any more
  std::function<void()> cancel_sweep_;     // set while SweepPools waits
};

}  // namespace warmroute::gateway
