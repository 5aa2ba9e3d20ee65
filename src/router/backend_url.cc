#include "router/backend_url.h"

#include <charconv>
#include <system_error>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace warmroute::router {
namespace {

constexpr std::string_view kScheme = "http://";
constexpr std::string_view kTlsScheme = "https://";

bool IsHostNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

bool IsIpv6Char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' ||
         c == '.';
}

bool StartsWithSchemeIgnoringCase(std::string_view url, std::string_view scheme) {
  if (url.size() < scheme.size()) return false;
  for (size_t i = 0; i < scheme.size(); ++i) {
    char c = url[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != scheme[i]) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<HttpHostPort> ParseBackendUrl(std::string_view url) {
  const auto invalid = [url](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected http://host:port or https://host:port, got '",
                     absl::CHexEscape(std::string(url)), "' (", std::string(why), ")"));
  };
  HttpHostPort out;
  out.tls = StartsWithSchemeIgnoringCase(url, kTlsScheme);
  if (!out.tls && !StartsWithSchemeIgnoringCase(url, kScheme)) {
    return invalid("the scheme must be http:// or https://");
  }
  std::string_view rest = url.substr(out.tls ? kTlsScheme.size() : kScheme.size());
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);

  std::string_view port_text;
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return invalid("unclosed '[' in the host");
    const std::string_view host = rest.substr(1, close - 1);
    if (host.empty() || host.find(':') == std::string_view::npos) {
      return invalid("expected an IPv6 address in brackets");
    }
    for (char c : host) {
      if (!IsIpv6Char(c)) return invalid("invalid character in the IPv6 address");
    }
    out.host = std::string(host);
    rest.remove_prefix(close + 1);
    if (rest.empty() || rest.front() != ':') return invalid("missing :port");
    port_text = rest.substr(1);
  } else {
    const size_t colon = rest.find(':');
    if (colon == std::string_view::npos) {
      for (char c : rest) {
        if (c == '/' || c == '?' || c == '#') return invalid("a path or query is not allowed");
      }
      return invalid("missing :port");
    }
    const std::string_view host = rest.substr(0, colon);
    if (host.empty()) return invalid("missing host");
    for (char c : host) {
      if (c == '@') return invalid("user info is not allowed");
      if (!IsHostNameChar(c)) return invalid("invalid character in the host");
    }
    out.host = std::string(host);
    port_text = rest.substr(colon + 1);
  }

  if (port_text.empty()) return invalid("missing port");
  for (char c : port_text) {
    if (c == '/' || c == '?' || c == '#') return invalid("a path or query is not allowed");
    if (c < '0' || c > '9') return invalid("the port must be a number");
  }
  uint32_t port = 0;
  const char* end = port_text.data() + port_text.size();
  const auto [ptr, ec] = std::from_chars(port_text.data(), end, port);
  if (ec != std::errc() || ptr != end || port == 0 || port > 65535) {
    return invalid("the port must be in [1, 65535]");
  }
  out.port = static_cast<uint16_t>(port);
  return out;
}

std::string HostPortString(const HttpHostPort& address) {
  if (address.host.find(':') != std::string::npos) {
    return absl::StrCat("[", address.host, "]:", address.port);
  }
  return absl::StrCat(address.host, ":", address.port);
}

std::string CanonicalBackendUrl(const HttpHostPort& address) {
  return absl::StrCat(std::string(address.tls ? kTlsScheme : kScheme), HostPortString(address));
}

}  // namespace warmroute::router
