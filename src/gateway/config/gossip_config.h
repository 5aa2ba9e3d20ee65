// gossip: placement gossip between the gateway replicas in front of one fleet
// (core/routing/placement_gossip.h says what is sent and why; gateway/fleet/gossip.h runs it;
// docs/many-gateways.md).
//
//   gossip:
//     port: 7946                 required: the UDP port this gateway receives on and sends from
//     host: "0.0.0.0"            the address it listens on
//     peers: ["gw.svc:7946"]     required, non-empty: NAME:PORT, IP:PORT or [IPv6]:PORT. A name
//                                may resolve to several addresses (a Kubernetes headless
//                                Service of the gateways lists every replica, this one
//                                included: a gateway ignores its own messages)
//     interval_ms: 10            how often the placements made since the last message, and
//                                this gateway's load per backend, are sent (1..1000)
//     resolve_interval_ms: 5000  how often the peers' names are resolved again (>= 100)
//
// Only datagrams from the peers' resolved addresses are read. Read at start: a reload keeps the
// running gossip. Errors name the key: "gossip.peers[1]: expected NAME:PORT, got 'gw' (no port)".
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/json_writer.h"
#include "gateway/config/config_reader.h"

namespace warmroute::gateway {

struct GossipPeer {
  std::string host;  // a name or an IP address
  uint16_t port = 0;
  bool operator==(const GossipPeer&) const = default;
};

struct GossipConfig {
  uint16_t port = 0;  // 0: gossip off
  std::string host = "0.0.0.0";
  std::vector<std::string> peers;  // as written
  std::vector<GossipPeer> peer_addresses;
  std::chrono::milliseconds interval{10};
  std::chrono::milliseconds resolve_interval{5'000};
  bool enabled() const { return port != 0; }
  bool operator==(const GossipConfig&) const = default;
};

// Reads the "gossip" section's map (unknown keys are the caller's to check).
absl::Status ParseGossipConfig(MapReader& map, GossipConfig* out);

// The section as the effective config shows it (nothing when off).
void WriteGossipConfig(const GossipConfig& config, JsonWriter& w);

}  // namespace warmroute::gateway
