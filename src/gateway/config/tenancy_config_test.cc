#include "gateway/config/tenancy_config.h"

#include <string>

#include "common/status.h"
#include "gateway/config/config.h"
#include "gateway/tenancy/tenants.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::gateway {
namespace {

using ::testing::HasSubstr;

// printf %s sk-acme | sha256sum
constexpr char kAcmeDigest[] = "5f8eee912cd7c0ccb238560e8a22e7f78909e6dac18288188f7f4ea35112700d";

std::string WithBackends(std::string tenancy) {
  return R"(
backends:
  - {name: v1, url: "http://127.0.0.1:9001", kind: vllm}
  - {name: s1, url: "http://127.0.0.1:9002", kind: sglang, pool: sglang}
)" + tenancy;
}

TEST(TenancyConfigTest, ReadsTenantsKeysIsolationWeightsAndLimits) {
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(WithBackends(std::string(R"(
tenancy: {salt_secret: "0123456789abcdef-secret", anonymous_tenant: public}
rate_limits: {redis: "redis://127.0.0.1:6379", redis_timeout_ms: 20}
tenants:
  - name: acme
    api_keys_sha256: [")") + kAcmeDigest + R"("]
    models: [llama]
    pools: [default, sglang]
    weight: 3
    rate_limits: {requests_per_s: 10, prompt_tokens_per_s: 5000, prompt_tokens_burst: 20000,
                  max_concurrent: 4}
  - name: public
    isolation: {shared_group: web}
)"));
  ASSERT_TRUE(config.ok()) << config.status();
  const TenancyConfig& t = config->tenancy;
  ASSERT_EQ(t.tenants.size(), 2u);
  EXPECT_EQ(t.anonymous_tenant, "public");
  EXPECT_EQ(t.redis_url, "redis://127.0.0.1:6379");
  EXPECT_EQ(t.redis_timeout.count(), 20);
  const TenantConfig& acme = t.tenants[0];
  ASSERT_EQ(acme.api_key_digests.size(), 1u);
  EXPECT_EQ(acme.api_key_digests[0][0], 0x5f);
  EXPECT_EQ(acme.api_key_digests[0][31], 0x0d);
  EXPECT_EQ(acme.models, std::vector<std::string>{"llama"});
  EXPECT_EQ(acme.pools, (std::vector<std::string>{"default", "sglang"}));
  EXPECT_TRUE(acme.shared_group.empty());  // isolated by default
  EXPECT_EQ(acme.weight, 3);
  ASSERT_TRUE(acme.limits.requests.has_value());
  EXPECT_EQ(acme.limits.requests->rate_per_s, 10);
  EXPECT_EQ(acme.limits.requests->burst, 10);  // default: one second's worth
  EXPECT_EQ(acme.limits.prompt_tokens->burst, 20000);
  EXPECT_EQ(acme.limits.max_concurrent, 4);
  EXPECT_EQ(t.tenants[1].shared_group, "web");
  EXPECT_EQ(t.tenants[1].pools, std::vector<std::string>{"default"});
  EXPECT_FALSE(t.tenants[1].limits.any());
}

TEST(TenancyConfigTest, RefusesAnEngineWithoutCacheSaltSharedByTwoCacheDomains) {
  // sglang cannot isolate with cache_salt: two isolated tenants on its pool would share KV.
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(WithBackends(R"(
tenancy: {salt_secret: "0123456789abcdef-secret"}
tenants:
  - {name: a, pools: [sglang]}
  - {name: b, pools: [default, sglang]}
)"));
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("tenants[1].pools: pool 'sglang'"));
  EXPECT_THAT(config.status().message(), HasSubstr("backend 's1' (kind sglang"));
  EXPECT_EQ(ParamOf(config.status()), "tenants[1].pools");

  // One group on it, or a dedicated pool per isolated tenant, is fine.
  EXPECT_TRUE(ParseGatewayConfig(WithBackends(R"(
tenancy: {salt_secret: "0123456789abcdef-secret"}
tenants:
  - {name: a, pools: [sglang], isolation: {shared_group: g}}
  - {name: b, pools: [default, sglang], isolation: {shared_group: g}}
  - {name: c}
)")).ok());
  // On vLLM (cache_salt) isolated tenants may share a pool.
  EXPECT_TRUE(ParseGatewayConfig(WithBackends(R"(
tenancy: {salt_secret: "0123456789abcdef-secret"}
tenants: [{name: a}, {name: b}]
)")).ok());
}

TEST(TenancyConfigTest, ErrorsNameTheKey) {
  const struct {
    std::string yaml;
    std::string message;
  } cases[] = {
      {"tenants: [{name: a}]", "tenancy.salt_secret: required when tenants are configured"},
      {"tenancy: {salt_secret: short}\ntenants: [{name: a}]", "tenancy.salt_secret: too short"},
      {"tenancy: {salt_secret: 0123456789abcdef0, anonymous_tenant: x}\ntenants: [{name: a}]",
       "tenancy.anonymous_tenant: 'x' is not one of `tenants`"},
      {"tenancy: {salt_secret: 0123456789abcdef0}\ntenants: [{name: a}, {name: a}]",
       "tenants[1].name: duplicate tenant name 'a'"},
      {"tenancy: {salt_secret: 0123456789abcdef0}\ntenants: [{name: a, api_keys_sha256: [abc]}]",
       "tenants[0].api_keys_sha256[0]: expected the 64 hex digits"},
      {std::string("tenancy: {salt_secret: 0123456789abcdef0}\ntenants: [{name: a, "
                   "api_keys_sha256: [") +
           kAcmeDigest + "]}, {name: b, api_keys_sha256: [" + kAcmeDigest + "]}]",
       "tenants[1].api_keys_sha256: an API key digest is listed twice (also tenants[0])"},
      {"tenancy: {salt_secret: 0123456789abcdef0}\ntenants: [{name: a, isolation: shared}]",
       "tenants[0].isolation: expected 'isolated' or {shared_group: NAME}"},
      {"tenancy: {salt_secret: 0123456789abcdef0}\ntenants: [{name: a, weight: 0}]",
       "tenants[0].weight: must be > 0"},
      {"tenancy: {salt_secret: 0123456789abcdef0}\n"
       "tenants: [{name: a, rate_limits: {requests_burst: 5}}]",
       "tenants[0].rate_limits.requests_burst: needs requests_per_s"},
      {"tenancy: {salt_secret: 0123456789abcdef0}\n"
       "tenants: [{name: a, rate_limits: {requests_per_s: -1}}]",
       "tenants[0].rate_limits.requests_per_s: must be > 0"},
      {"tenancy: {salt_secret: 0123456789abcdef0}\ntenants: [{name: a, pools: [gpu]}]\n"
       "backends: [{url: 'http://h:1'}]",
       "tenants[0].pools[0]: no backend is in pool 'gpu'"},
      {"rate_limits: {redis: 'http://h:1'}",
       "rate_limits.redis: bad Redis URL \"http://h:1\": expected redis://host[:port]"},
      {"tenancy: {anonymous_tenant: x}", "tenancy.anonymous_tenant: names no tenant"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(c.yaml);
    ASSERT_FALSE(config.ok()) << c.yaml;
    EXPECT_THAT(config.status().message(), HasSubstr(c.message)) << c.yaml;
  }
}

TEST(TenancyConfigTest, EffectiveConfigShowsNoSecretsOrDigests) {
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(std::string(R"(
tenancy: {salt_secret: "super-secret-salt-value"}
tenants: [{name: acme, api_keys_sha256: [")") + kAcmeDigest + R"("]}]
)");
  ASSERT_TRUE(config.ok()) << config.status();
  const std::string json = EffectiveConfigJson(*config);
  EXPECT_THAT(json, HasSubstr(R"("salt_secret":"<redacted>")"));
  EXPECT_THAT(json, HasSubstr(R"("api_keys":1)"));
  EXPECT_THAT(json, ::testing::Not(HasSubstr("super-secret")));
  EXPECT_THAT(json, ::testing::Not(HasSubstr(kAcmeDigest)));
}

TEST(TenancyConfigTest, TheDeployExampleIsValidAndEveryKeyExampleMatchesItsDigest) {
  absl::StatusOr<GatewayConfig> config =
      LoadGatewayConfig(std::string(WARMROUTE_SOURCE_DIR) + "/deploy/tenancy/multi-tenant.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->tenancy.tenants.size(), 5u);
  EXPECT_EQ(config->tenancy.anonymous_tenant, "public");
  EXPECT_EQ(config->backends[4].pool, "trial");
  Tenants tenants(config->tenancy);
  for (const auto& [key, name] : std::vector<std::pair<std::string, std::string>>{
           {"sk-support-example", "acme-support"},
           {"sk-bi-example", "acme-bi"},
           {"sk-web-example", "acme-web"},
           {"sk-trial-example", "trial"}}) {
    absl::StatusOr<const Tenant*> tenant = tenants.Authenticate("Bearer " + key);
    ASSERT_TRUE(tenant.ok()) << key;
    EXPECT_EQ((*tenant)->config.name, name);
  }
}

}  // namespace
}  // namespace warmroute::gateway
