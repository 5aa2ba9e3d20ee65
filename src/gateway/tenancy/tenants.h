// Who a request comes from, and what that tenant's requests look like upstream.
//
// Authentication: `Authorization: Bearer <key>`. The key's SHA-256 is compared with every
// configured digest in constant time (CRYPTO_memcmp over all of them, no early exit), so neither
// the comparison nor the lookup's duration tells a client how close a guess was. A request
// without the header belongs to the anonymous tenant when one is configured; an unknown key
// never does (401: a typo must not silently become anonymous). Keys are never stored or logged.
//
// Cache isolation: each tenant has a cache domain — itself when isolated, its group when it is
// in a shared_group. The gateway (1) keys the prefix index with the domain, so it never predicts
// a hit across domains, and (2) sets the upstream `cache_salt` to HMAC-SHA256(salt_secret,
// domain) — overwriting what the client sent — on engines that honour it (vLLM), so the engine
// never shares KV blocks across domains. The salt is stable across gateway replicas and restarts
// (same secret), so warm caches survive both; without the secret it cannot be forged or guessed
// from the tenant's name.
//
// Usage:
//   Tenants tenants(config.tenancy);
//   absl::StatusOr<const Tenant*> t = tenants.Authenticate(request.Header("authorization"));
//   if (!t.ok()) reply 401;
//   if (!(*t)->AllowsModel(model)) reply 404;
//   body = net::SetTopLevelMember(body, "cache_salt", (*t)->cache_salt_json);
//
// Thread-safety: immutable after construction; share freely.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gateway/config/tenancy_config.h"

namespace warmroute::gateway {

struct Tenant {
  TenantConfig config;
  // "tenant:<name>" or "group:<name>": keys the prefix index (routing::MakePrefixKey's tenant).
  std::string cache_domain;
  // The upstream cache_salt as a JSON string literal, quotes included.
  std::string cache_salt_json;

  // True when the tenant may use `model` (an empty allow-list allows any).
  bool AllowsModel(std::string_view model) const;
};

// SHA-256 of `data`, and a digest in lower-case hex (the config's spelling).
KeyDigest Sha256(std::string_view data);
std::string HexOf(const KeyDigest& digest);

class Tenants {
 public:
  explicit Tenants(const TenancyConfig& config);
  Tenants(const Tenants&) = delete;
  Tenants& operator=(const Tenants&) = delete;

  // False when no tenants are configured: every request is then anonymous and unrestricted.
  bool enabled() const { return !tenants_.empty(); }

  // The tenant of a request whose Authorization header is `authorization` ("" when absent).
  // Unauthenticated (401) for a missing key without an anonymous tenant, a header that is not
  // "Bearer <key>", or an unknown key. REQUIRES: enabled().
  absl::StatusOr<const Tenant*> Authenticate(std::string_view authorization) const;

 private:
  struct KeyEntry {
    KeyDigest digest;
    size_t tenant;
  };
  std::vector<std::unique_ptr<Tenant>> tenants_;
  std::vector<KeyEntry> keys_;
  const Tenant* anonymous_ = nullptr;
};

}  // namespace warmroute::gateway
