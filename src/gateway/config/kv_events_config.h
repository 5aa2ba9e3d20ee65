// backends[i].kv_events: where a backend's engine publishes its KV-cache events (vLLM's and
// SGLang's ZMQ publishers, `--kv-events-config`), for precise mode (docs/precise-mode.md).
//
//   kv_events:
//     endpoint: "tcp://HOST:PORT"         required: the engine's PUB socket (vLLM "endpoint",
//                                          with the engine's host for "*")
//     topic: ""                            the publisher's topic (vLLM "topic"; default "")
//     replay_endpoint: "tcp://HOST:PORT"   optional: its replay ROUTER socket; without it a gap
//                                          in the sequence numbers rebuilds the slice at once
//     dp_ranks: 1                          data-parallel ranks publishing (1..256): rank r
//                                          publishes on PORT + r and replays on its PORT + r,
//                                          as vLLM offsets its endpoints by rank
//     route_ranks: true                    with dp_ranks > 1: each rank is a routing target of
//                                          its own ("NAME/rank<r>", its own index slice; the
//                                          request carries X-data-parallel-rank: r); false: the
//                                          backend is one target, its ranks share one slice and
//                                          the engine's balancer picks the rank
//
// Only tcp:// endpoints with a numeric port (1..65535, and the port of the last rank too) are
// accepted: the gateway connects to them. Errors name the key: "backends[0].kv_events.endpoint:
// expected tcp://HOST:PORT, got 'udp://x:1' (line 7)".
//
// Usage:
//   WR_RETURN_IF_ERROR(ParseKvEventsConfig(backend_map, &backend.kv_events));
//   std::string rank1 = KvEventsEndpointOfRank(backend.kv_events.endpoint, 1);
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/json_writer.h"
#include "gateway/config/config_reader.h"

namespace warmroute::gateway {

inline constexpr int kMaxDpRanks = 256;

struct KvEventsConfig {
  std::string endpoint{};  // "tcp://host:port"; empty: the backend publishes no KV events
  std::string topic{};
  std::string replay_endpoint{};  // empty: no replay
  int dp_ranks = 1;
  bool route_ranks = true;
  bool enabled() const { return !endpoint.empty(); }
  // Whether the gateway addresses each rank as a target of its own (gateway/fleet/rank_targets.h).
  bool routes_ranks() const { return enabled() && dp_ranks > 1 && route_ranks; }
  bool operator==(const KvEventsConfig&) const = default;
};

struct TcpEndpoint {
  std::string host;  // as written (an IPv6 host keeps its brackets: ZMQ wants them)
  uint16_t port = 0;
};

// InvalidArgument "expected tcp://HOST:PORT, got '<text>' (<why>)".
absl::StatusOr<TcpEndpoint> ParseTcpEndpoint(std::string_view text);

// Reads the "kv_events" key of a backend's map (absent or null: disabled).
absl::Status ParseKvEventsConfig(MapReader& backend, KvEventsConfig* out);

// Writes the "kv_events" key of a backend's JSON object, when enabled.
void WriteKvEventsConfig(const KvEventsConfig& config, JsonWriter& w);

// The endpoint of data-parallel rank `rank`: the port plus `rank`. REQUIRES: `endpoint` parsed.
std::string KvEventsEndpointOfRank(const std::string& endpoint, int rank);

}  // namespace warmroute::gateway
