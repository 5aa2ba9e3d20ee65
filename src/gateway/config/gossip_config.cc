#include "gateway/config/gossip_config.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/absl_view.h"

namespace warmroute::gateway {
namespace {

// "name:port", "1.2.3.4:port" or "[::1]:port".
absl::Status ParsePeer(const std::string& text, std::string_view path, GossipPeer* out) {
  const auto bad = [&](std::string_view why) {
    return KeyError(path, nullptr,
                    absl::StrCat("expected NAME:PORT, IP:PORT or [IPv6]:PORT, got '", text, "' (",
                                 AbslView(why), ")"));
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) return bad("no port");
  std::string host = text.substr(0, colon);
  if (host.starts_with('[')) {
    if (!host.ends_with(']')) return bad("no closing ']'");
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return bad("an IPv6 address goes in brackets");
  }
  if (host.empty()) return bad("no host");
  int port = 0;
  if (!absl::SimpleAtoi(AbslView(std::string_view(text).substr(colon + 1)), &port) || port < 1 ||
      port > 65535) {
    return bad("the port must be a number in 1..65535");
  }
  *out = GossipPeer{.host = std::move(host), .port = static_cast<uint16_t>(port)};
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseGossipConfig(MapReader& map, GossipConfig* out) {
  int64_t port = 0;
  const ConfigNode* port_node = map.Get("port");
  if (port_node == nullptr) return KeyError(map.PathOf("port"), nullptr, "required");
  WR_RETURN_IF_ERROR(ReadInt(port_node, map.PathOf("port"), 1, 65535, &port));
  out->port = static_cast<uint16_t>(port);
  WR_RETURN_IF_ERROR(ReadNonEmptyString(map.Get("host"), map.PathOf("host"), &out->host));
  const ConfigNode* peers = map.Get("peers");
  if (peers == nullptr) return KeyError(map.PathOf("peers"), nullptr, "required");
  WR_RETURN_IF_ERROR(ReadStringList(peers, map.PathOf("peers"), &out->peers));
  if (out->peers.empty()) return KeyError(map.PathOf("peers"), peers, "must list a peer");
  for (size_t i = 0; i < out->peers.size(); ++i) {
    GossipPeer peer;
    WR_RETURN_IF_ERROR(
        ParsePeer(out->peers[i], absl::StrCat(map.PathOf("peers"), "[", i, "]"), &peer));
    out->peer_addresses.push_back(std::move(peer));
  }
  WR_RETURN_IF_ERROR(
      ReadMillis(map.Get("interval_ms"), map.PathOf("interval_ms"), 1, &out->interval));
  if (out->interval > std::chrono::milliseconds(1000)) {
    return KeyError(map.PathOf("interval_ms"), map.Get("interval_ms"),
                    absl::StrCat("must be at most 1000, got ", out->interval.count()));
  }
  return ReadMillis(map.Get("resolve_interval_ms"), map.PathOf("resolve_interval_ms"), 100,
                    &out->resolve_interval);
}

void WriteGossipConfig(const GossipConfig& config, JsonWriter& w) {
  if (!config.enabled()) return;
  w.Key("gossip").BeginObject();
  w.Key("port").Int(config.port);
  w.Key("host").String(config.host);
  w.Key("peers").BeginArray();
  for (const std::string& peer : config.peers) w.String(peer);
  w.EndArray();
  w.Key("interval_ms").Int(config.interval.count());
  w.Key("resolve_interval_ms").Int(config.resolve_interval.count());
  w.EndObject();
}

}  // namespace warmroute::gateway
