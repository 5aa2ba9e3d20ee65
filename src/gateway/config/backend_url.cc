#include "gateway/config/backend_url.h"

#include <string>
#include <utility>
#include <variant>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "net/url.h"

namespace warmroute::gateway {
namespace {

// The reason in this contract's words: a path is refused along with a query, and anything
// after an IPv6 address other than ":port" counts as a missing port.
std::string_view Why(net::UrlError error) {
  switch (error) {
    case net::UrlError::kQuery:
      return "a path or query is not allowed";
    case net::UrlError::kJunkAfterBracket:
      return "missing :port";
    default:
      return net::UrlErrorText(error);
  }
}

}  // namespace

absl::StatusOr<HttpHostPort> ParseBackendUrl(std::string_view url) {
  const auto invalid = [url](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected http://host:port or https://host:port, got '",
                     absl::CHexEscape(std::string(url)), "' (", std::string(why), ")"));
  };
  const std::string scheme = net::UrlScheme(url);
  if (scheme != "http" && scheme != "https") {
    return invalid("the scheme must be http:// or https://");
  }
  std::variant<net::Url, net::UrlError> parsed = net::ParseUrl(url);
  if (const net::UrlError* error = std::get_if<net::UrlError>(&parsed)) {
    return invalid(Why(*error));
  }
  net::Url& parts = std::get<net::Url>(parsed);
  if (!parts.path.empty() && parts.path != "/") return invalid("a path or query is not allowed");
  if (!parts.port.has_value()) return invalid("missing :port");
  if (parts.host.empty()) return invalid("missing host");
  return HttpHostPort{.host = std::move(parts.host), .port = *parts.port, .tls = scheme == "https"};
}

std::string HostPortString(const HttpHostPort& address) {
  return net::HostPort(address.host, address.port);
}

std::string CanonicalBackendUrl(const HttpHostPort& address) {
  return absl::StrCat(address.tls ? "https://" : "http://", HostPortString(address));
}

}  // namespace warmroute::gateway
