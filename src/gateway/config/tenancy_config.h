// The tenancy part of the gateway's configuration: who the clients are (API keys → tenants) and
// what each tenant may do. Parsed by config.cc from these YAML keys (every key optional unless
// noted; unknown keys are errors):
//
//   tenancy:
//     salt_secret:      the key of the cache_salt hash (>= 16 characters). Required when tenants
//                       are configured; every gateway replica of one fleet must have the same.
//     anonymous_tenant: the tenant of requests without an Authorization header (must be one of
//                       `tenants`). Absent: such requests get 401.
//   tenants:            list of
//     name:             required, unique, printable ASCII without spaces
//     api_keys_sha256:  hex SHA-256 digests of the tenant's API keys (`printf %s KEY | sha256sum`);
//                       each key maps to one tenant. The keys themselves are never in the config.
//     models:           models the tenant may use ([] = any)
//     pools:            backend pools the tenant may use (default [default]); a backend's pool is
//                       backends[i].pool (default "default")
//     isolation:        `isolated` (default) or `{shared_group: NAME}`: tenants of one group share
//                       warm caches; isolated tenants share nothing (see tenant_identity.h)
//     weight:           priority weight in weighted-fair admission, (0, 1000], default 1
//     rate_limits:      requests_per_s, requests_burst (default max(1, requests_per_s)),
//                       prompt_tokens_per_s, prompt_tokens_burst (default prompt_tokens_per_s),
//                       max_concurrent (0 = unlimited); absent rates are unlimited
//   rate_limits:
//     redis:            redis://host:port — limits shared by every gateway using that Redis;
//                       absent: local to this gateway
//     redis_timeout_ms: one Redis call at most (default 50); beyond, the local limiter decides
//
// Cross-checks with the backends (ValidateTenancy): a tenant's pools must exist when backends
// are configured, and a pool holding an engine that cannot isolate caches per request
// (EngineSupportsCacheSalt false) may serve one cache domain only — two isolated tenants, or two
// groups, sharing it would silently share KV blocks, so the config is refused.
//
// Thread-safety: immutable values and pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "gateway/config/config_document.h"
#include "gateway/config/config_reader.h"
#include "gateway/fleet/engine_metrics.h"
#include "gateway/tenancy/rate_limits.h"

namespace warmroute::gateway {

inline constexpr std::string_view kDefaultPool = "default";

using KeyDigest = std::array<uint8_t, 32>;  // SHA-256

struct TenantConfig {
  std::string name;
  std::vector<KeyDigest> api_key_digests;
  std::vector<std::string> models;  // empty: any
  std::vector<std::string> pools{std::string(kDefaultPool)};
  std::string shared_group;  // empty: isolated
  double weight = 1;
  TenantLimits limits;
};

struct TenancyConfig {
  std::vector<TenantConfig> tenants;  // empty: tenancy off (no authentication)
  std::string salt_secret;
  std::string anonymous_tenant;  // empty: a key is required
  std::string redis_url;  // "redis://host:port"; empty: local limits
  std::chrono::milliseconds redis_timeout{50};

  bool enabled() const { return !tenants.empty(); }
};

// True for engine kinds known to take a per-request `cache_salt` that keys their prefix cache
// (vLLM >= 0.9). The others (SGLang, llama.cpp, TensorRT-LLM, unknown OpenAI-compatible servers)
// share cache across requests whatever the body says.
bool EngineSupportsCacheSalt(EngineKind kind);

// The sections `tenancy`, `tenants` and `rate_limits` of the root map (absent: defaults).
absl::Status ParseTenancy(MapReader& root, TenancyConfig* out);

// A backend's pool and kind, for the cross-checks.
struct PoolMember {
  std::string backend;
  std::string pool;
  EngineKind kind = EngineKind::kVllm;
};

absl::Status ValidateTenancy(const TenancyConfig& tenancy, const std::vector<PoolMember>& members);

}  // namespace warmroute::gateway
