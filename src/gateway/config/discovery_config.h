// discovery: backends from DNS (gateway/fleet/dns_discovery.h runs it; docs/discovery.md).
//
//   discovery:
//     dns: "vllm.svc.cluster.local:8000"   required: a name and the engines' port (A and AAAA
//                                           records), or an SRV name starting with '_'
//                                           ("_http._tcp.vllm.svc.cluster.local", no port: the
//                                           ports come from the SRV records)
//     interval_ms: 5000                     how often the name is resolved (>= 100)
//     timeout_ms: 1000                      one DNS query's wait for its answer (sent twice)
//     resolver: "127.0.0.1:5353"            the DNS server: an IP address, port 53 by default
//                                           ("[::1]:53" for IPv6); absent: the first
//                                           nameserver of /etc/resolv.conf, read at start
//     kind, models, pool, kv_capacity_tokens: as in a backends entry, for every discovered
//                                           backend
//     kv_events: {endpoint: "tcp://{host}:5557", ...}   as in a backends entry; "{host}" is
//                                           replaced by each discovered address
//
// Discovered backends are plain http:// (no tls key). One discovery section per gateway.
// Errors name the key: "discovery.dns: expected NAME:PORT or an SRV name (_service._proto.NAME),
// got 'vllm' (line 3)".
//
// Usage:
//   WR_RETURN_IF_ERROR(ParseDiscoveryConfig(section_map, &config.discovery));
//   BackendConfig b = DiscoveredBackendConfig(config.discovery, "10.0.0.5", 8000, "dns:10...");
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/json_writer.h"
#include "gateway/config/backend_config.h"
#include "gateway/config/config_reader.h"

namespace warmroute::gateway {

struct DiscoveryConfig {
  std::string dns;          // as written: "name:port" or "_srv._tcp.name"
  std::string name;         // the name resolved
  uint16_t port = 0;        // A/AAAA: the engines' port; 0 for an SRV name
  bool srv = false;         // the name is an SRV name (starts with '_')
  std::chrono::milliseconds interval{5'000};
  std::chrono::milliseconds timeout{1'000};
  std::string resolver_host;  // an IP address; empty: /etc/resolv.conf's first nameserver
  uint16_t resolver_port = 53;
  // kind, models, kv_capacity_tokens, pool and kv_events of every discovered backend (its name,
  // url, host and port stay empty here).
  BackendConfig backend;
  bool enabled() const { return !dns.empty(); }
  bool operator==(const DiscoveryConfig&) const = default;
};

// Reads the "discovery" section's map (unknown keys are the caller's to check).
absl::Status ParseDiscoveryConfig(MapReader& map, DiscoveryConfig* out);

// The backend discovered at host:port, named `name`: http://host:port with the section's traits,
// "{host}" in its kv_events endpoints replaced by `host` (in brackets for IPv6).
BackendConfig DiscoveredBackendConfig(const DiscoveryConfig& config, const std::string& host,
                                      uint16_t port, const std::string& name);

// Writes the "discovery" key of the effective config, when enabled.
void WriteDiscoveryConfig(const DiscoveryConfig& config, JsonWriter& w);

}  // namespace warmroute::gateway
