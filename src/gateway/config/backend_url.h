// Backend addresses: the `url` of a backend in the gateway's config and admin API. The gateway
// speaks HTTP/1.1 to engines, in plaintext (http://) or over TLS (https://; see the backend's
// `tls` settings in config.h). Only scheme://host:port is accepted, with an optional trailing
// '/': no path, no user info, no query, and an explicit port (engines have no conventional port).
//
//   http://127.0.0.1:8001    host "127.0.0.1", port 8001
//   http://vllm-0.local:80/  host "vllm-0.local", port 80
//   http://[::1]:8001        host "::1" (an IPv6 literal in brackets), port 8001
//   https://vllm-0.local:8443  the same over TLS
// The scheme is case-insensitive; host names are letters, digits, '.', '-' and '_'.
//
// Usage:
//   absl::StatusOr<HttpHostPort> hp = ParseBackendUrl("http://127.0.0.1:8001");
//   CanonicalBackendUrl(*hp);   // "http://127.0.0.1:8001"
//   HostPortString(*hp);        // "127.0.0.1:8001" (the default backend name)
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace warmroute::gateway {

struct HttpHostPort {
  std::string host;  // without brackets for IPv6
  uint16_t port = 0;
  bool tls = false;  // https://
};

// InvalidArgument "expected http://host:port or https://host:port, got '<url>' (<why>)" for
// anything else; port 0 is refused.
absl::StatusOr<HttpHostPort> ParseBackendUrl(std::string_view url);

// "host:port", with brackets around an IPv6 host ("[::1]:8001").
std::string HostPortString(const HttpHostPort& address);

// "http://host:port" (or https://): the url as the config's effective view shows it.
std::string CanonicalBackendUrl(const HttpHostPort& address);

}  // namespace warmroute::gateway
