// What every worker thread's Proxy shares: the gateway's routing state, its admission gate and
// rate limiter, the observability sinks, the clock and the request-id counter; and the settings a
// request is served with.
//
// Lifetime: the Gateway (gateway.h) owns every object a ProxyContext refers to, creates them
// before its workers and destroys them after the workers' threads have been joined, so a
// ProxyContext is valid for every request a Proxy serves.
//
// Thread-safety: every object referred to is thread-safe; ProxySettings is immutable once shared.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/clock.h"
#include "core/routing/prefix_key.h"
#include "gateway/config/config.h"
#include "gateway/config/normalize_config.h"
#include "gateway/fleet/backends.h"
#include "gateway/fleet/prewarmer.h"
#include "gateway/keys/model_tokenizers.h"
#include "gateway/observability/access_log.h"
#include "gateway/observability/gateway_metrics.h"
#include "gateway/observability/hot_prefixes.h"
#include "gateway/tenancy/admission.h"
#include "gateway/tenancy/rate_limiter.h"
#include "gateway/tenancy/tenants.h"
#include "net/http1/http_client.h"

namespace warmroute::gateway {

// A request is served with the settings current when it arrived (a reload swaps the pointer).
struct ProxySettings {
  net::UpstreamTimeouts timeouts;
  int retries = 2;
  routing::PrefixKeyOptions key;
  PrefixKeyMode key_mode = PrefixKeyMode::kAuto;
  // The configured models' tokenizers for precise keys (gateway/keys/request_key.h); null in
  // approximate mode or without models.
  std::shared_ptr<const ModelTokenizers> models;
  bool response_headers = true;                   // x-warmroute-backend, x-warmroute-reason
  size_t max_response_bytes = size_t{256} << 20;  // a non-streaming response body
  std::shared_ptr<const Tenants> tenants;         // null or !enabled(): no tenancy
  bool log_prompts = false;
  // The normalize rules (normalize.h); null: none configured.
  std::shared_ptr<const NormalizeConfig> normalize;
  // Cluster-wide rate limits (redis_rate_store.h); empty: local only.
  std::string redis_url;
  std::chrono::milliseconds redis_timeout{50};

  // The tenants when tenancy is on, else null.
  const Tenants* active_tenants() const {
    return tenants != nullptr && tenants->enabled() ? tenants.get() : nullptr;
  }
};

struct ProxyContext {
  Backends& backends;
  AdmissionGate& admission;
  LocalRateLimiter& limiter;
  GatewayMetrics& metrics;
  AccessLog& access_log;
  // observability.sample_requests (request_sample.h): null when off.
  AccessLog* request_sample;
  double sample_rate;
  HotPrefixes& hot_prefixes;
  const Clock& clock;
  std::atomic<uint64_t>& next_request_id;
  // Observes routed prompt requests for prewarm and handoff; null when prewarm is off.
  Prewarmer* prewarmer = nullptr;
};

}  // namespace warmroute::gateway
