#include "gateway/config/discovery_config.h"

#include <string>

#include "gateway/config/config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::gateway {
namespace {

using ::testing::HasSubstr;

DiscoveryConfig Discovery(std::string_view yaml) {
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(yaml);
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? config->discovery : DiscoveryConfig{};
}

std::string ErrorOf(std::string_view yaml) {
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(yaml);
  EXPECT_FALSE(config.ok()) << yaml;
  return config.ok() ? "" : std::string(config.status().message());
}

TEST(DiscoveryConfigTest, AbsentMeansDisabled) {
  EXPECT_FALSE(Discovery("").enabled());
  EXPECT_FALSE(Discovery("discovery: null\n").enabled());
}

TEST(DiscoveryConfigTest, ReadsANameWithAPortAndTheBackendsTraits) {
  const DiscoveryConfig d = Discovery(R"(
discovery:
  dns: vllm.svc.cluster.local:8000
  interval_ms: 2000
  timeout_ms: 300
  resolver: 127.0.0.1:5353
  kind: sglang
  models: [m1]
  pool: gpu
  kv_capacity_tokens: 1000
  kv_events: {endpoint: "tcp://{host}:5557", replay_endpoint: "tcp://{host}:5558"}
)");
  EXPECT_TRUE(d.enabled());
  EXPECT_EQ(d.name, "vllm.svc.cluster.local");
  EXPECT_EQ(d.port, 8000);
  EXPECT_FALSE(d.srv);
  EXPECT_EQ(d.interval.count(), 2000);
  EXPECT_EQ(d.timeout.count(), 300);
  EXPECT_EQ(d.resolver_host, "127.0.0.1");
  EXPECT_EQ(d.resolver_port, 5353);
  EXPECT_EQ(d.backend.kind, EngineKind::kSglang);
  EXPECT_EQ(d.backend.pool, "gpu");
  EXPECT_EQ(d.backend.kv_capacity_tokens, 1000);
  EXPECT_EQ(d.backend.kv_events.endpoint, "tcp://{host}:5557");
}

TEST(DiscoveryConfigTest, DefaultsAndSrvNames) {
  const DiscoveryConfig d = Discovery("discovery: {dns: _http._tcp.vllm.test}\n");
  EXPECT_TRUE(d.srv);
  EXPECT_EQ(d.name, "_http._tcp.vllm.test");
  EXPECT_EQ(d.port, 0);
  EXPECT_EQ(d.interval.count(), 5000);
  EXPECT_EQ(d.timeout.count(), 1000);
  EXPECT_EQ(d.resolver_host, "");
  EXPECT_EQ(d.backend.kind, EngineKind::kVllm);
  EXPECT_EQ(d.backend.pool, "default");
}

TEST(DiscoveryConfigTest, ResolverForms) {
  EXPECT_EQ(Discovery("discovery: {dns: a:1, resolver: 10.0.0.2}\n").resolver_port, 53);
  const DiscoveryConfig v6 = Discovery("discovery: {dns: a:1, resolver: \"[::1]:5353\"}\n");
  EXPECT_EQ(v6.resolver_host, "::1");
  EXPECT_EQ(v6.resolver_port, 5353);
  EXPECT_EQ(Discovery("discovery: {dns: a:1, resolver: \"fd00::53\"}\n").resolver_host,
            "fd00::53");
}

TEST(DiscoveryConfigTest, ErrorsNameTheKey) {
  EXPECT_THAT(ErrorOf("discovery: {interval_ms: 100}\n"), HasSubstr("discovery.dns: required"));
  EXPECT_THAT(ErrorOf("discovery: {dns: vllm}\n"),
              HasSubstr("discovery.dns: expected NAME:PORT or an SRV name (_service._proto.NAME), "
                        "got 'vllm' (no port)"));
  EXPECT_THAT(ErrorOf("discovery: {dns: \"vllm:0\"}\n"), HasSubstr("1..65535"));
  EXPECT_THAT(ErrorOf("discovery: {dns: \"a..b:80\"}\n"), HasSubstr("an empty label"));
  EXPECT_THAT(ErrorOf("discovery: {dns: \"_http._tcp.x:80\"}\n"),
              HasSubstr("an SRV name takes its ports from its records"));
  EXPECT_THAT(ErrorOf("discovery: {dns: a:1, interval_ms: 10}\n"),
              HasSubstr("discovery.interval_ms: must be >= 100, got 10"));
  EXPECT_THAT(ErrorOf("discovery: {dns: a:1, resolver: dns.google}\n"),
              HasSubstr("discovery.resolver: expected IP[:PORT] ([IPv6]:PORT), got 'dns.google' "
                        "(the resolver must be an IP address)"));
  EXPECT_THAT(ErrorOf("discovery: {dns: a:1, resolver: \"10.0.0.1:x\"}\n"),
              HasSubstr("the port must be a number"));
  EXPECT_THAT(ErrorOf("discovery: {dns: a:1, kind: foo}\n"), HasSubstr("discovery.kind:"));
  EXPECT_THAT(ErrorOf("discovery: {dns: a:1, url: \"http://x:1\"}\n"),
              HasSubstr("discovery.url: unknown key"));
  EXPECT_THAT(ErrorOf("discovery: {dns: a:1}\nprefix_key: {mode: precise}\n"
                      "models: [{name: m, tokenizer: /t}]\n"),
              HasSubstr("missing on: discovery"));
}

TEST(DiscoveryConfigTest, ADiscoveredBackendGetsItsAddressInUrlAndKvEvents) {
  const DiscoveryConfig d = Discovery(
      "discovery: {dns: a:1, models: [m], kv_events: {endpoint: \"tcp://{host}:5557\"}}\n");
  const BackendConfig v4 = DiscoveredBackendConfig(d, "10.0.0.5", 8000, "dns:10.0.0.5:8000");
  EXPECT_EQ(v4.name, "dns:10.0.0.5:8000");
  EXPECT_EQ(v4.url, "http://10.0.0.5:8000");
  EXPECT_EQ(v4.port, 8000);
  EXPECT_EQ(v4.models, std::vector<std::string>{"m"});
  EXPECT_EQ(v4.kv_events.endpoint, "tcp://10.0.0.5:5557");
  const BackendConfig v6 = DiscoveredBackendConfig(d, "fd00::5", 8000, "dns:[fd00::5]:8000");
  EXPECT_EQ(v6.url, "http://[fd00::5]:8000");
  EXPECT_EQ(v6.kv_events.endpoint, "tcp://[fd00::5]:5557");
}

TEST(DiscoveryConfigTest, RoundTripsThroughTheEffectiveConfig) {
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(
      "discovery: {dns: \"_x._tcp.a\", resolver: \"[::1]:5353\", interval_ms: 700, pool: p,"
      " kv_events: {endpoint: \"tcp://{host}:5557\"}}\n");
  ASSERT_TRUE(config.ok()) << config.status();
  const std::string json = EffectiveConfigJson(*config);
  EXPECT_THAT(json, HasSubstr(R"("discovery":{"dns":"_x._tcp.a","interval_ms":700,)"
                              R"("timeout_ms":1000,"resolver":"[::1]:5353","kind":"vllm",)"));
  absl::StatusOr<GatewayConfig> again = ParseGatewayConfig(json);
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << json;
  EXPECT_EQ(again->discovery, config->discovery);
}

}  // namespace
}  // namespace warmroute::gateway
