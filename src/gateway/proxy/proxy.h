// The proxy pipeline for the routed endpoints (POST /v1/chat/completions, /v1/completions):
//
//   with tenants: authenticate the API key (401; tenants.h) → parse the body once (core/request;
//   400 naming the bad field) → the tenant's models (404) → prefix key (approximate mode, keyed
//   by model and the tenant's cache domain, else the x-warmroute-tenant header / cache_salt) →
//   the tenant's rate limits (429 + Retry-After; rate_limiter.h, or redis_rate_store.h) → admission
//   (weighted-fair across tenants; 429 when the queue is full) → routing decision among the
//   tenant's pools (Backends; 404 for an unknown model, 503 when no backend is eligible) → forward
//   the original bytes (forwarding.h: the tenant's cache_salt set) on a pooled keep-alive
//   connection → relay.
//
// Retries: a dispatch that fails before any byte reached the client — connect refused or failed,
// the connection reset or closed before a response head, a 5xx head, a status no client may be
// given (101, 600 and above: engine_answer.h), or a non-streaming body that breaks off — is
// retried on the decision's next alternate, at most `retries` times; each failure counts against
// the backend's health (outlier ejection). A timeout (no head within first_byte, or a
// non-streaming body that stalls for idle_stream) is not retried (the engine may be working on
// it): 504. When every attempt failed the client gets the last 5xx as the engine sent it, 502
// after an invalid status, or 503. upstream_attempt.h has the whole table.
//
// Relay: SSE is passed through piece by piece as it arrives (net/usage_tap.h reads the usage chunk
// and drops it when the gateway added include_usage); other bodies are read whole (bounded)
// before anything is sent, and sent with their status, content type and end-to-end headers. The
// first streamed piece is the first token for the Router and the gateway's TTFT; the usage's
// cached_tokens closes the loop. An upstream that fails mid-stream ends the client's stream with
// an SSE error event and the connection is cut (never a hang: idle_stream bounds every wait). A
// client that disconnects cancels the handler: the upstream exchange is destroyed mid-body, which
// closes its connection, and vLLM aborts the request and frees its KV blocks.
//
// Optional response headers: x-warmroute-backend, x-warmroute-reason.
//
// Thread-safety: one Proxy per worker thread (it owns that thread's connection pools); the
// shared parts (Backends, metrics, log, admission) are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "common/clock.h"
#include "core/request/inference_request.h"
#include "core/routing/prefix_key.h"
#include "gateway/fleet/backends.h"
#include "gateway/observability/access_log.h"
#include "gateway/observability/gateway_metrics.h"
#include "gateway/observability/hot_prefixes.h"
#include "gateway/tenancy/admission.h"
#include "gateway/tenancy/rate_limiter.h"
#include "gateway/tenancy/redis_rate_store.h"
#include "gateway/tenancy/tenants.h"
#include "net/http1/http_client.h"
#include "net/http1/response_writer.h"

namespace warmroute::gateway {

struct ProxySettings {
  net::UpstreamTimeouts timeouts;
  int retries = 2;
  routing::PrefixKeyOptions key;
  bool response_headers = true;
  size_t max_response_bytes = size_t{256} << 20;  // a non-streaming response body
  std::shared_ptr<const Tenants> tenants;            // null or !enabled(): no tenancy
  bool log_prompts = false;
  // Cluster-wide rate limits (redis_rate_store.h); empty: local only.
  std::string redis_url;
  std::chrono::milliseconds redis_timeout{50};
};

// The parts every worker's Proxy shares.
struct ProxyShared {
  Backends* backends = nullptr;
  GatewayMetrics* metrics = nullptr;
  AccessLog* access_log = nullptr;
  AdmissionGate* admission = nullptr;
  const Clock* clock = nullptr;
  std::atomic<uint64_t>* next_request_id = nullptr;
  LocalRateLimiter* limiter = nullptr;
  HotPrefixes* hot_prefixes = nullptr;
};

class Proxy {
 public:
  Proxy(ProxyShared shared, std::shared_ptr<const ProxySettings> settings,
        net::Executor executor);
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  net::Task<void> Handle(request::Endpoint endpoint, net::HttpRequest& request,
                         net::ResponseWriter& writer);

  // The settings new requests get. Worker thread only.
  const std::shared_ptr<const ProxySettings>& settings() const { return settings_; }

  // Takes effect for requests that start afterwards (config reload). Worker thread only.
  void SetSettings(std::shared_ptr<const ProxySettings> settings);

 private:
  // This thread's pool for `target`, created on first use; creating one also drops the pools of
  // backends no longer present.
  net::UpstreamPool& Pool(const BackendTarget& target);

  // Schedules the request's speculative index insert right after the handler's next wait.
  void CommitInsertSoon(uint64_t request_id);

  // The tenant's rate-limit verdict: from Redis when configured and answering (cluster-wide),
  // else from the local limiter (and the fallback is counted). Concurrency is always local.
  net::Task<LimitDecision> TakeBuckets(const std::string& tenant, const TenantLimits& limits,
                                       double prompt_tokens);

  ProxyShared shared_;
  std::shared_ptr<const ProxySettings> settings_;
  net::Executor executor_;
  absl::flat_hash_map<std::string, std::unique_ptr<net::UpstreamPool>> pools_;
  std::unique_ptr<RedisRateStore> redis_;  // this thread's connection; null: local limits
};

}  // namespace warmroute::gateway
