#include "gateway/config/discovery_config.h"

#include <arpa/inet.h>

#include <algorithm>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/absl_view.h"
#include "gateway/config/backend_url.h"
#include "net/dns/dns_message.h"

namespace warmroute::gateway {
namespace {

constexpr std::string_view kHostPlaceholder = "{host}";

std::optional<uint16_t> ParsePort(std::string_view text) {
  int port = 0;
  if (!absl::SimpleAtoi(AbslView(text), &port) || port < 1 || port > 65535) return std::nullopt;
  return static_cast<uint16_t>(port);
}

bool IsIpAddress(const std::string& host) {
  unsigned char buffer[16];
  return inet_pton(AF_INET, host.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

absl::Status ParseDns(const ConfigNode* node, std::string_view path, DiscoveryConfig* out) {
  WR_RETURN_IF_ERROR(ReadNonEmptyString(node, path, &out->dns));
  const std::string& text = out->dns;
  const auto bad = [&](std::string_view why) {
    return KeyError(path, node,
                    absl::StrCat("expected NAME:PORT or an SRV name (_service._proto.NAME), got '",
                                 text, "' (", AbslView(why), ")"));
  };
  if (text.starts_with('_')) {
    if (text.find(':') != std::string::npos) {
      return bad("an SRV name takes its ports from its records: give no port");
    }
    out->srv = true;
    out->name = text;
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos) return bad("no port");
    std::optional<uint16_t> port = ParsePort(std::string_view(text).substr(colon + 1));
    if (!port) return bad("the port must be a number in 1..65535");
    out->port = *port;
    out->name = text.substr(0, colon);
  }
  const absl::Status name = net::dns::ValidateDnsName(out->name);
  if (!name.ok()) return bad(std::string(name.message()));
  return absl::OkStatus();
}

absl::Status ParseResolver(const ConfigNode* node, std::string_view path, DiscoveryConfig* out) {
  if (node == nullptr) return absl::OkStatus();
  std::string text;
  WR_RETURN_IF_ERROR(ReadNonEmptyString(node, path, &text));
  const auto bad = [&](std::string_view why) {
    return KeyError(path, node,
                    absl::StrCat("expected IP[:PORT] ([IPv6]:PORT), got '", text, "' (",
                                 AbslView(why), ")"));
  };
  std::string host = text;
  std::string_view port;
  if (text.starts_with('[')) {
    const size_t close = text.find(']');
    if (close == std::string::npos) return bad("no closing ']'");
    host = text.substr(1, close - 1);
    const std::string_view rest = std::string_view(text).substr(close + 1);
    if (!rest.empty() && !rest.starts_with(':')) return bad("expected ':' after ']'");
    if (!rest.empty()) port = rest.substr(1);
  } else if (std::count(text.begin(), text.end(), ':') == 1) {
    const size_t colon = text.find(':');
    host = text.substr(0, colon);
    port = std::string_view(text).substr(colon + 1);
  }
  if (!IsIpAddress(host)) return bad("the resolver must be an IP address");
  out->resolver_host = host;
  out->resolver_port = 53;
  if (!port.empty() || text.ends_with(':')) {
    std::optional<uint16_t> number = ParsePort(port);
    if (!number) return bad("the port must be a number in 1..65535");
    out->resolver_port = *number;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseDiscoveryConfig(MapReader& map, DiscoveryConfig* out) {
  const ConfigNode* dns = map.Get("dns");
  if (dns == nullptr) return KeyError(map.PathOf("dns"), nullptr, "required");
  WR_RETURN_IF_ERROR(ParseDns(dns, map.PathOf("dns"), out));
  WR_RETURN_IF_ERROR(
      ReadMillis(map.Get("interval_ms"), map.PathOf("interval_ms"), 100, &out->interval));
  WR_RETURN_IF_ERROR(ReadMillis(map.Get("timeout_ms"), map.PathOf("timeout_ms"), 1, &out->timeout));
  WR_RETURN_IF_ERROR(ParseResolver(map.Get("resolver"), map.PathOf("resolver"), out));
  return ParseBackendTraits(map, &out->backend);
}

BackendConfig DiscoveredBackendConfig(const DiscoveryConfig& config, const std::string& host,
                                      uint16_t port, const std::string& name) {
  BackendConfig out = config.backend;
  const HttpHostPort address{.host = host, .port = port, .tls = false};
  out.name = name;
  out.url = CanonicalBackendUrl(address);
  out.host = host;
  out.port = port;
  const std::string bracketed = host.find(':') == std::string::npos ? host : "[" + host + "]";
  for (std::string* endpoint : {&out.kv_events.endpoint, &out.kv_events.replay_endpoint}) {
    *endpoint = absl::StrReplaceAll(*endpoint, {{AbslView(kHostPlaceholder), bracketed}});
  }
  return out;
}

void WriteDiscoveryConfig(const DiscoveryConfig& config, JsonWriter& w) {
  if (!config.enabled()) return;
  w.Key("discovery").BeginObject();
  w.Key("dns").String(config.dns);
  w.Key("interval_ms").Int(config.interval.count());
  w.Key("timeout_ms").Int(config.timeout.count());
  if (!config.resolver_host.empty()) {
    const bool v6 = config.resolver_host.find(':') != std::string::npos;
    w.Key("resolver").String(absl::StrCat(v6 ? "[" : "", config.resolver_host, v6 ? "]" : "",
                                          ":", config.resolver_port));
  }
  WriteBackendTraits(config.backend, w);
  w.EndObject();
}

}  // namespace warmroute::gateway
