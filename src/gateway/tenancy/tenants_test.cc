#include "gateway/tenancy/tenants.h"

#include <string>

#include "gateway/config/config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::gateway {
namespace {

using ::testing::HasSubstr;

TenancyConfig Config(std::string_view anonymous = "") {
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(std::string(R"(
tenancy: {salt_secret: "0123456789abcdef-secret"}
tenants:
  - name: acme
    # printf %s sk-acme | sha256sum
    api_keys_sha256: [5f8eee912cd7c0ccb238560e8a22e7f78909e6dac18288188f7f4ea35112700d]
    models: [llama]
  - name: acme-bi
    api_keys_sha256: [)") + HexOf(Sha256("sk-bi")) + R"(]
    isolation: {shared_group: acme-apps}
  - name: acme-web
    api_keys_sha256: [)" + HexOf(Sha256("sk-web")) + R"(]
    isolation: {shared_group: acme-apps}
)");
  EXPECT_TRUE(config.ok()) << config.status();
  config->tenancy.anonymous_tenant = std::string(anonymous);
  return config->tenancy;
}

TEST(TenantsTest, Sha256MatchesTheCommandLineTool) {
  EXPECT_EQ(HexOf(Sha256("sk-acme")),
            "5f8eee912cd7c0ccb238560e8a22e7f78909e6dac18288188f7f4ea35112700d");
}

TEST(TenantsTest, AKeyAuthenticatesItsTenantOnly) {
  Tenants tenants(Config());
  absl::StatusOr<const Tenant*> t = tenants.Authenticate("Bearer sk-acme");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->config.name, "acme");
  EXPECT_EQ((*tenants.Authenticate("bearer  sk-web ").value()).config.name, "acme-web");
  for (std::string_view bad : {"Bearer sk-acm", "Bearer sk-acme2", "Basic c2stYWNtZQ==",
                               "Bearer ", "sk-acme", ""}) {
    absl::StatusOr<const Tenant*> refused = tenants.Authenticate(bad);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnauthenticated) << bad;
    // The message never echoes what the client sent.
    if (bad.size() > 7) {
      EXPECT_THAT(refused.status().message(), ::testing::Not(HasSubstr(bad)));
    }
  }
}

TEST(TenantsTest, NoKeyIsTheAnonymousTenantWhenThereIsOneButAWrongKeyNeverIs) {
  Tenants tenants(Config("acme-web"));
  EXPECT_EQ(tenants.Authenticate("").value()->config.name, "acme-web");
  EXPECT_FALSE(tenants.Authenticate("Bearer wrong").ok());
}

TEST(TenantsTest, CacheDomainsAndSaltsSeparateIsolatedTenantsAndJoinAGroup) {
  Tenants tenants(Config());
  const Tenant& acme = *tenants.Authenticate("Bearer sk-acme").value();
  const Tenant& bi = *tenants.Authenticate("Bearer sk-bi").value();
  const Tenant& web = *tenants.Authenticate("Bearer sk-web").value();
  EXPECT_EQ(acme.cache_domain, "tenant:acme");
  EXPECT_EQ(bi.cache_domain, "group:acme-apps");
  EXPECT_EQ(bi.cache_salt_json, web.cache_salt_json);
  EXPECT_NE(acme.cache_salt_json, bi.cache_salt_json);
  // A JSON string of 32 hex digits, keyed by the secret: not the tenant's name.
  EXPECT_EQ(acme.cache_salt_json.size(), 34u);
  EXPECT_EQ(acme.cache_salt_json.find("acme"), std::string::npos);
  TenancyConfig other_secret = Config();
  other_secret.salt_secret = "another-secret-0123456789";
  Tenants rekeyed(other_secret);
  EXPECT_NE(rekeyed.Authenticate("Bearer sk-acme").value()->cache_salt_json,
            acme.cache_salt_json);
  // The same secret gives the same salt on every gateway replica.
  Tenants replica(Config());
  EXPECT_EQ(replica.Authenticate("Bearer sk-acme").value()->cache_salt_json,
            acme.cache_salt_json);
}

TEST(TenantsTest, ModelAllowList) {
  Tenants tenants(Config());
  EXPECT_TRUE(tenants.Authenticate("Bearer sk-acme").value()->AllowsModel("llama"));
  EXPECT_FALSE(tenants.Authenticate("Bearer sk-acme").value()->AllowsModel("gpt"));
  EXPECT_TRUE(tenants.Authenticate("Bearer sk-bi").value()->AllowsModel("gpt"));  // [] = any
}

}  // namespace
}  // namespace warmroute::gateway
