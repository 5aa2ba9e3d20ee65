#include "gateway/config/kv_events_config.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/absl_view.h"

namespace warmroute::gateway {

namespace {

constexpr std::string_view kScheme = "tcp://";

absl::Status EndpointError(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("expected tcp://HOST:PORT, got '", AbslView(text), "' (", AbslView(why), ")"));
}

// Reads an endpoint key; `last_rank`: the port of rank last_rank must exist too.
absl::Status ReadEndpoint(MapReader& map, std::string_view key, int last_rank, std::string* out) {
  const ConfigNode* node = map.Get(key);
  WR_RETURN_IF_ERROR(ReadString(node, map.PathOf(key), out));
  if (node == nullptr) return absl::OkStatus();
  absl::StatusOr<TcpEndpoint> endpoint = ParseTcpEndpoint(*out);
  if (!endpoint.ok()) {
    return KeyError(map.PathOf(key), node, std::string(endpoint.status().message()));
  }
  if (endpoint->port + last_rank > 65535) {
    return KeyError(map.PathOf(key), node,
                    absl::StrCat("port ", endpoint->port, " + dp_ranks - 1 = ",
                                 endpoint->port + last_rank, " is above 65535"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TcpEndpoint> ParseTcpEndpoint(std::string_view text) {
  if (!text.starts_with(kScheme)) return EndpointError(text, "the scheme must be tcp://");
  const std::string_view rest = text.substr(kScheme.size());
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) return EndpointError(text, "no port");
  TcpEndpoint out;
  out.host = std::string(rest.substr(0, colon));
  if (out.host.empty()) return EndpointError(text, "no host");
  if (out.host == "*") return EndpointError(text, "'*' binds; give the engine's host");
  if (out.host.find_first_of("/ ") != std::string::npos) return EndpointError(text, "bad host");
  if (out.host.find(':') != std::string::npos &&
      (out.host.front() != '[' || out.host.back() != ']')) {
    return EndpointError(text, "an IPv6 host needs brackets");
  }
  int port = 0;
  if (!absl::SimpleAtoi(AbslView(rest.substr(colon + 1)), &port) || port < 1 || port > 65535) {
    return EndpointError(text, "the port must be a number in 1..65535");
  }
  out.port = static_cast<uint16_t>(port);
  return out;
}

absl::Status ParseKvEventsConfig(MapReader& backend, KvEventsConfig* out) {
  const ConfigNode* node = backend.Get("kv_events");
  if (node == nullptr) return absl::OkStatus();
  const std::string path = backend.PathOf("kv_events");
  WR_RETURN_IF_ERROR(MapReader::CheckMap(*node, path));
  MapReader map(*node, path);
  WR_RETURN_IF_ERROR(
      ReadSmallInt(map.Get("dp_ranks"), map.PathOf("dp_ranks"), 1, kMaxDpRanks, &out->dp_ranks));
  const ConfigNode* endpoint = map.Get("endpoint");
  if (endpoint == nullptr) return KeyError(map.PathOf("endpoint"), node, "required");
  WR_RETURN_IF_ERROR(ReadEndpoint(map, "endpoint", out->dp_ranks - 1, &out->endpoint));
  WR_RETURN_IF_ERROR(
      ReadEndpoint(map, "replay_endpoint", out->dp_ranks - 1, &out->replay_endpoint));
  WR_RETURN_IF_ERROR(ReadString(map.Get("topic"), map.PathOf("topic"), &out->topic));
  WR_RETURN_IF_ERROR(
      ReadBool(map.Get("route_ranks"), map.PathOf("route_ranks"), &out->route_ranks));
  return map.CheckNoUnknownKeys();
}

void WriteKvEventsConfig(const KvEventsConfig& config, JsonWriter& w) {
  if (!config.enabled()) return;
  w.Key("kv_events").BeginObject();
  w.Key("endpoint").String(config.endpoint);
  w.Key("topic").String(config.topic);
  if (!config.replay_endpoint.empty()) w.Key("replay_endpoint").String(config.replay_endpoint);
  w.Key("dp_ranks").Int(config.dp_ranks);
  if (!config.route_ranks) w.Key("route_ranks").Bool(false);
  w.EndObject();
}

std::string KvEventsEndpointOfRank(const std::string& endpoint, int rank) {
  absl::StatusOr<TcpEndpoint> parsed = ParseTcpEndpoint(endpoint);
  if (!parsed.ok() || rank == 0) return endpoint;
  return absl::StrCat(AbslView(kScheme), parsed->host, ":", parsed->port + rank);
}

}  // namespace warmroute::gateway
