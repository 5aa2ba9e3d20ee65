#include "gateway/config/normalize_config.h"

#include <string>

#include "gateway/config/config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::gateway {
namespace {

using ::testing::HasSubstr;

constexpr char kTenants[] = R"(
tenancy: {salt_secret: "0123456789abcdef-secret"}
tenants:
  - name: acme
    api_keys_sha256: ["5f8eee912cd7c0ccb238560e8a22e7f78909e6dac18288188f7f4ea35112700d"]
)";

TEST(NormalizeConfigTest, ReadsEntriesPerTenantAndModel) {
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(std::string(kTenants) + R"(
normalize:
  - tenant: acme
    collapse_whitespace: true
  - model: llama
    canonical_tools: true
    move_to_end: '^Current time: .*$'
  - move_to_end: ['^Date:', '^Request id:']
)");
  ASSERT_TRUE(config.ok()) << config.status();
  const std::vector<NormalizeEntry>& e = config->normalize.entries;
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].tenant, "acme");
  EXPECT_TRUE(e[0].collapse_whitespace);
  EXPECT_FALSE(e[0].canonical_tools);
  EXPECT_EQ(e[1].model, "llama");
  EXPECT_TRUE(e[1].canonical_tools);
  ASSERT_EQ(e[1].move_to_end.size(), 1u);
  EXPECT_EQ(e[1].move_to_end[0].text, "^Current time: .*$");
  EXPECT_TRUE(e[1].move_to_end[0].regex->Search("Current time: 12:00"));
  ASSERT_EQ(e[2].move_to_end.size(), 2u);
  EXPECT_TRUE(e[2].tenant.empty() && e[2].model.empty());
}

TEST(NormalizeConfigTest, AbsentMeansNoRule) {
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig("retries: 1\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->normalize.enabled());
}

TEST(NormalizeConfigTest, ErrorsNameTheKey) {
  struct Case {
    std::string yaml;
    std::string message;
  };
  const Case cases[] = {
      {"normalize: {tenant: acme}", "normalize: expected a list"},
      {"normalize:\n  - {model: llama}", "normalize[0]: enables no rule"},
      {"normalize:\n  - {model: llama, collapse_whitespace: yes_please}",
       "normalize[0].collapse_whitespace"},
      {"normalize:\n  - {canonical_tools: true, colapse_whitespace: true}", "colapse_whitespace"},
      {"normalize:\n  - {move_to_end: '(unclosed'}",
       "normalize[0].move_to_end: not a valid regular expression"},
      {"normalize:\n  - {move_to_end: ['^ok', '[z-a]']}",
       "normalize[0].move_to_end[1]: not a valid regular expression"},
      {"normalize:\n  - {model: '', canonical_tools: true}",
       "normalize[0].model: must not be empty"},
      {"normalize:\n  - {tenant: nobody, canonical_tools: true}",
       "normalize[0].tenant: no tenant named 'nobody' in tenants"},
      {std::string(kTenants) + "normalize:\n  - {canonical_tools: true}\n  - {tenant: acmee, "
                               "canonical_tools: true}",
       "normalize[1].tenant: no tenant named 'acmee'"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(c.yaml);
    ASSERT_FALSE(config.ok()) << c.yaml;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << c.yaml;
    EXPECT_THAT(config.status().message(), HasSubstr(c.message)) << c.yaml;
  }
}

TEST(NormalizeConfigTest, EffectiveConfigParsesBack) {
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(R"(
normalize:
  - {model: llama, canonical_tools: true, move_to_end: ['^Current time:']}
)");
  ASSERT_TRUE(config.ok()) << config.status();
  const std::string json = EffectiveConfigJson(*config);
  EXPECT_THAT(json, HasSubstr(R"("normalize":[{"model":"llama","collapse_whitespace":false,)"
                              R"("canonical_tools":true,"move_to_end":["^Current time:"]}])"));
  absl::StatusOr<GatewayConfig> again = ParseGatewayConfig(json);
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->normalize.entries.size(), 1u);
  EXPECT_EQ(again->normalize.entries[0].move_to_end[0].text, "^Current time:");
}

}  // namespace
}  // namespace warmroute::gateway
