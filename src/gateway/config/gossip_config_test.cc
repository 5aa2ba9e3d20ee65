#include "gateway/config/gossip_config.h"

#include <string>

#include "gateway/config/config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::gateway {
namespace {

using ::testing::HasSubstr;

GossipConfig ReadGossip(std::string_view yaml) {
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(yaml);
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? config->gossip : GossipConfig{};
}

std::string GossipErrorOf(std::string_view yaml) {
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(yaml);
  EXPECT_FALSE(config.ok()) << yaml;
  return config.ok() ? "" : std::string(config.status().message());
}

TEST(GossipConfigTest, AbsentMeansOff) {
  EXPECT_FALSE(ReadGossip("").enabled());
  EXPECT_EQ(EffectiveConfigJson(ParseGatewayConfig("").value()).find("gossip"), std::string::npos);
}

TEST(GossipConfigTest, ReadsThePortThePeersAndTheIntervals) {
  const GossipConfig g = ReadGossip(R"(
gossip:
  port: 7946
  host: 10.0.0.4
  peers: ["warmroute-gossip.default.svc.cluster.local:7946", "10.0.0.5:7000", "[::1]:7001"]
  interval_ms: 20
  resolve_interval_ms: 2000
)");
  EXPECT_TRUE(g.enabled());
  EXPECT_EQ(g.port, 7946);
  EXPECT_EQ(g.host, "10.0.0.4");
  ASSERT_EQ(g.peer_addresses.size(), 3u);
  EXPECT_EQ(g.peer_addresses[0],
            (GossipPeer{.host = "warmroute-gossip.default.svc.cluster.local", .port = 7946}));
  EXPECT_EQ(g.peer_addresses[1], (GossipPeer{.host = "10.0.0.5", .port = 7000}));
  EXPECT_EQ(g.peer_addresses[2], (GossipPeer{.host = "::1", .port = 7001}));
  EXPECT_EQ(g.interval.count(), 20);
  EXPECT_EQ(g.resolve_interval.count(), 2000);
  const GossipConfig defaults = ReadGossip("gossip: {port: 7946, peers: [\"gw:7946\"]}\n");
  EXPECT_EQ(defaults.host, "0.0.0.0");
  EXPECT_EQ(defaults.interval.count(), 10);
  EXPECT_EQ(defaults.resolve_interval.count(), 5000);
  EXPECT_THAT(
      EffectiveConfigJson(ParseGatewayConfig("gossip: {port: 7946, peers: [\"gw:7946\"]}").value()),
      HasSubstr(R"("gossip":{"port":7946,"host":"0.0.0.0","peers":["gw:7946"])"));
}

TEST(GossipConfigTest, ErrorsNameTheKey) {
  EXPECT_THAT(GossipErrorOf("gossip: {peers: [\"gw:7946\"]}\n"),
              HasSubstr("gossip.port: required"));
  EXPECT_THAT(GossipErrorOf("gossip: {port: 7946}\n"), HasSubstr("gossip.peers: required"));
  EXPECT_THAT(GossipErrorOf("gossip: {port: 7946, peers: []}\n"),
              HasSubstr("gossip.peers: must list"));
  EXPECT_THAT(GossipErrorOf("gossip: {port: 70000, peers: [\"gw:1\"]}\n"),
              HasSubstr("gossip.port"));
  EXPECT_THAT(GossipErrorOf("gossip: {port: 7946, peers: [\"gw:1\", \"gw\"]}\n"),
              HasSubstr("gossip.peers[1]: expected NAME:PORT, IP:PORT or [IPv6]:PORT, got 'gw' "
                        "(no port)"));
  EXPECT_THAT(GossipErrorOf("gossip: {port: 7946, peers: [\"::1:7946\"]}\n"),
              HasSubstr("an IPv6 address goes in brackets"));
  EXPECT_THAT(GossipErrorOf("gossip: {port: 7946, peers: [\"gw:x\"]}\n"),
              HasSubstr("the port must be a number in 1..65535"));
  EXPECT_THAT(GossipErrorOf("gossip: {port: 7946, peers: [\"gw:1\"], interval_ms: 5000}\n"),
              HasSubstr("gossip.interval_ms: must be at most 1000"));
  EXPECT_THAT(GossipErrorOf("gossip: {port: 7946, peers: [\"gw:1\"], resolve_interval_ms: 10}\n"),
              HasSubstr("gossip.resolve_interval_ms"));
  EXPECT_THAT(GossipErrorOf("gossip: {port: 7946, peers: [\"gw:1\"], bogus: 1}\n"),
              HasSubstr("bogus"));
}

}  // namespace
}  // namespace warmroute::gateway
