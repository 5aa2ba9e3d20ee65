#include "gateway/config/tenancy_config.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "net/redis/redis_connection.h"

namespace warmroute::gateway {
namespace {

using Type = ConfigNode::Type;

constexpr size_t kMinSaltSecretChars = 16;

absl::Status ReadDigest(const ConfigNode& node, const std::string& path, KeyDigest* out) {
  std::string text;
  WR_RETURN_IF_ERROR(ReadNonEmptyString(&node, path, &text));
  text = absl::AsciiStrToLower(text);
  if (text.size() != 64 || text.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return KeyError(path, &node,
                    "expected the 64 hex digits of the key's SHA-256 (printf %s KEY | sha256sum)");
  }
  for (size_t i = 0; i < out->size(); ++i) {
    const auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
    (*out)[i] = static_cast<uint8_t>(nibble(text[2 * i]) << 4 | nibble(text[2 * i + 1]));
  }
  return absl::OkStatus();
}

// A rate in (0, 1e12]; absent leaves `out` unset.
absl::Status ReadRate(const ConfigNode* node, const std::string& path,
                      std::optional<double>* out) {
  if (node == nullptr) return absl::OkStatus();
  double value = 0;
  WR_RETURN_IF_ERROR(ReadDouble(node, path, &value));
  if (value <= 0 || value > 1e12) return KeyError(path, node, "must be > 0 and <= 1e12");
  *out = value;
  return absl::OkStatus();
}

// One bucket from `<what>_per_s` and `<what>_burst`; the burst defaults to `default_burst(rate)`.
absl::Status ReadBucket(MapReader& map, const std::string& what, double min_burst,
                        std::optional<BucketLimit>* out) {
  std::optional<double> rate;
  std::optional<double> burst;
  const std::string rate_key = absl::StrCat(what, "_per_s");
  const std::string burst_key = absl::StrCat(what, "_burst");
  WR_RETURN_IF_ERROR(ReadRate(map.Get(rate_key), map.PathOf(rate_key), &rate));
  const ConfigNode* burst_node = map.Get(burst_key);
  WR_RETURN_IF_ERROR(ReadRate(burst_node, map.PathOf(burst_key), &burst));
  if (!rate) {
    if (burst) return KeyError(map.PathOf(burst_key), burst_node, "needs " + rate_key);
    return absl::OkStatus();
  }
  const double b = burst.value_or(std::max(min_burst, *rate));
  if (b < min_burst) {
    return KeyError(map.PathOf(burst_key), burst_node, absl::StrCat("must be >= ", min_burst));
  }
  *out = BucketLimit{.rate_per_s = *rate, .burst = b};
  return absl::OkStatus();
}

absl::Status ParseLimits(MapReader& map, TenantLimits* out) {
  WR_RETURN_IF_ERROR(ReadBucket(map, "requests", 1, &out->requests));
  WR_RETURN_IF_ERROR(ReadBucket(map, "prompt_tokens", 1, &out->prompt_tokens));
  WR_RETURN_IF_ERROR(ReadInt(map.Get("max_concurrent"), map.PathOf("max_concurrent"), 0,
                             1'000'000, &out->max_concurrent));
  return map.CheckNoUnknownKeys();
}

absl::Status ParseIsolation(const ConfigNode& node, const std::string& path, TenantConfig* out) {
  if (node.type == Type::kString || (node.plain && node.is_scalar())) {
    if (node.text == "isolated") return absl::OkStatus();
    return KeyError(path, &node,
                    absl::StrCat("expected 'isolated' or {shared_group: NAME}, got ",
                                 Describe(node)));
  }
  WR_RETURN_IF_ERROR(MapReader::CheckMap(node, path));
  MapReader map(node, path);
  const ConfigNode* group = map.Get("shared_group");
  if (group == nullptr) return KeyError(map.PathOf("shared_group"), &node, "required");
  WR_RETURN_IF_ERROR(ReadNonEmptyString(group, map.PathOf("shared_group"), &out->shared_group));
  WR_RETURN_IF_ERROR(CheckToken(group, map.PathOf("shared_group"), out->shared_group));
  return map.CheckNoUnknownKeys();
}

absl::Status ParseTenant(MapReader& map, TenantConfig* out) {
  const ConfigNode* name = map.Get("name");
  if (name == nullptr) return KeyError(map.PathOf("name"), nullptr, "required");
  WR_RETURN_IF_ERROR(ReadNonEmptyString(name, map.PathOf("name"), &out->name));
  WR_RETURN_IF_ERROR(CheckToken(name, map.PathOf("name"), out->name));

  if (const ConfigNode* keys = map.Get("api_keys_sha256"); keys != nullptr) {
    const std::string path = map.PathOf("api_keys_sha256");
    if (keys->type != Type::kList) return WrongType(path, *keys, "a list");
    for (size_t i = 0; i < keys->items.size(); ++i) {
      KeyDigest digest{};
      WR_RETURN_IF_ERROR(ReadDigest(keys->items[i], absl::StrCat(path, "[", i, "]"), &digest));
      out->api_key_digests.push_back(digest);
    }
  }
  WR_RETURN_IF_ERROR(ReadStringList(map.Get("models"), map.PathOf("models"), &out->models));
  if (const ConfigNode* pools = map.Get("pools"); pools != nullptr) {
    out->pools.clear();
    WR_RETURN_IF_ERROR(ReadStringList(pools, map.PathOf("pools"), &out->pools));
    if (out->pools.empty()) return KeyError(map.PathOf("pools"), pools, "must not be empty");
  }
  if (const ConfigNode* isolation = map.Get("isolation"); isolation != nullptr) {
    WR_RETURN_IF_ERROR(ParseIsolation(*isolation, map.PathOf("isolation"), out));
  }
  const ConfigNode* weight = map.Get("weight");
  WR_RETURN_IF_ERROR(ReadDouble(weight, map.PathOf("weight"), &out->weight));
  if (out->weight <= 0 || out->weight > 1000) {
    return KeyError(map.PathOf("weight"), weight,
                    absl::StrCat("must be > 0 and <= 1000, got ", out->weight));
  }
  if (const ConfigNode* limits = map.Get("rate_limits"); limits != nullptr) {
    const std::string path = map.PathOf("rate_limits");
    WR_RETURN_IF_ERROR(MapReader::CheckMap(*limits, path));
    MapReader limits_map(*limits, path);
    WR_RETURN_IF_ERROR(ParseLimits(limits_map, &out->limits));
  }
  return map.CheckNoUnknownKeys();
}

absl::Status ParseTenants(const ConfigNode& list, std::vector<TenantConfig>* out) {
  std::map<KeyDigest, size_t> key_owner;
  return ReadMapList(list, "tenants", [&](size_t i, MapReader& map, const ConfigNode& item) {
    TenantConfig tenant;
    WR_RETURN_IF_ERROR(ParseTenant(map, &tenant));
    for (size_t j = 0; j < out->size(); ++j) {
      if ((*out)[j].name == tenant.name) {
        return KeyError(map.PathOf("name"), &item,
                        absl::StrCat("duplicate tenant name '", tenant.name, "' (also tenants[",
                                     j, "])"));
      }
    }
    for (const KeyDigest& digest : tenant.api_key_digests) {
      auto [it, inserted] = key_owner.emplace(digest, i);
      if (!inserted) {
        return KeyError(map.PathOf("api_keys_sha256"), &item,
                        absl::StrCat("an API key digest is listed twice (also tenants[",
                                     it->second, "]): a key maps to one tenant"));
      }
    }
    out->push_back(std::move(tenant));
    return absl::OkStatus();
  });
}

}  // namespace

bool EngineSupportsCacheSalt(EngineKind kind) { return kind == EngineKind::kVllm; }

absl::Status ParseTenancy(MapReader& root, TenancyConfig* out) {
  if (const ConfigNode* tenants = root.Get("tenants"); tenants != nullptr) {
    WR_RETURN_IF_ERROR(ParseTenants(*tenants, &out->tenants));
  }
  const ConfigNode* tenancy = root.Get("tenancy");
  const ConfigNode* secret = nullptr;
  const ConfigNode* anonymous = nullptr;
  if (tenancy != nullptr) {
    WR_RETURN_IF_ERROR(MapReader::CheckMap(*tenancy, "tenancy"));
    MapReader map(*tenancy, "tenancy");
    secret = map.Get("salt_secret");
    WR_RETURN_IF_ERROR(ReadString(secret, map.PathOf("salt_secret"), &out->salt_secret));
    anonymous = map.Get("anonymous_tenant");
    if (anonymous != nullptr) {
      WR_RETURN_IF_ERROR(
          ReadNonEmptyString(anonymous, map.PathOf("anonymous_tenant"), &out->anonymous_tenant));
    }
    WR_RETURN_IF_ERROR(map.CheckNoUnknownKeys());
  }
  if (const ConfigNode* limits = root.Get("rate_limits"); limits != nullptr) {
    WR_RETURN_IF_ERROR(MapReader::CheckMap(*limits, "rate_limits"));
    MapReader map(*limits, "rate_limits");
    const ConfigNode* redis = map.Get("redis");
    if (redis != nullptr) {
      WR_RETURN_IF_ERROR(ReadNonEmptyString(redis, map.PathOf("redis"), &out->redis_url));
    }
    if (redis != nullptr) {
      absl::StatusOr<net::RedisEndpoint> endpoint = net::ParseRedisUrl(out->redis_url);
      if (!endpoint.ok()) {
        return KeyError(map.PathOf("redis"), redis, std::string(endpoint.status().message()));
      }
    }
    WR_RETURN_IF_ERROR(ReadMillis(map.Get("redis_timeout_ms"), map.PathOf("redis_timeout_ms"), 1,
                                  &out->redis_timeout));
    WR_RETURN_IF_ERROR(map.CheckNoUnknownKeys());
  }

  if (!out->enabled()) {
    if (!out->anonymous_tenant.empty()) {
      return KeyError("tenancy.anonymous_tenant", anonymous, "names no tenant: `tenants` is empty");
    }
    return absl::OkStatus();
  }
  if (out->salt_secret.size() < kMinSaltSecretChars) {
    return KeyError("tenancy.salt_secret", secret,
                    absl::StrCat(out->salt_secret.empty() ? "required when tenants are configured"
                                                          : "too short",
                                 " (at least ", kMinSaltSecretChars,
                                 " characters; the key of each tenant's cache_salt — give every "
                                 "gateway replica the same)"));
  }
  if (!out->anonymous_tenant.empty()) {
    const bool known = std::any_of(out->tenants.begin(), out->tenants.end(),
                                   [&](const TenantConfig& t) { return t.name == out->anonymous_tenant; });
    if (!known) {
      return KeyError("tenancy.anonymous_tenant", anonymous,
                      absl::StrCat("'", out->anonymous_tenant, "' is not one of `tenants`"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateTenancy(const TenancyConfig& tenancy, const std::vector<PoolMember>& members) {
  if (!tenancy.enabled()) return absl::OkStatus();
  std::set<std::string> pools;
  for (const PoolMember& m : members) pools.insert(m.pool);
  // The cache domains using each pool: "tenant:<name>" for isolated tenants, "group:<name>".
  std::map<std::string, std::vector<std::pair<std::string, size_t>>> domains_of_pool;
  for (size_t i = 0; i < tenancy.tenants.size(); ++i) {
    const TenantConfig& t = tenancy.tenants[i];
    for (size_t p = 0; p < t.pools.size(); ++p) {
      if (!members.empty() && !pools.contains(t.pools[p])) {
        return InvalidParam(absl::StrCat("tenants[", i, "].pools"),
                            absl::StrCat("tenants[", i, "].pools[", p, "]: no backend is in pool '",
                                         t.pools[p], "' (backends[i].pool; default 'default')"));
      }
      const std::string domain = t.shared_group.empty() ? absl::StrCat("tenant '", t.name, "'")
                                                        : absl::StrCat("group '", t.shared_group, "'");
      auto& list = domains_of_pool[t.pools[p]];
      const bool seen = std::any_of(list.begin(), list.end(),
                                    [&](const auto& d) { return d.first == domain; });
      if (!seen) list.emplace_back(domain, i);
    }
  }
  for (const PoolMember& m : members) {
    if (EngineSupportsCacheSalt(m.kind)) continue;
    const auto it = domains_of_pool.find(m.pool);
    if (it == domains_of_pool.end() || it->second.size() < 2) continue;
    const auto& [first, first_index] = it->second[0];
    const auto& [second, second_index] = it->second[1];
    return InvalidParam(
        absl::StrCat("tenants[", second_index, "].pools"),
        absl::StrCat("tenants[", second_index, "].pools: pool '", m.pool, "' holds backend '",
                     m.backend, "' (kind ", std::string(EngineKindName(m.kind)),
                     ", which cannot isolate caches with cache_salt) and serves both ", first,
                     " (tenants[", first_index, "]) and ", second,
                     ": they would share KV cache; give each isolated tenant a dedicated pool "
                     "for such engines, or put them in one shared_group"));
  }
  return absl::OkStatus();
}

}  // namespace warmroute::gateway
