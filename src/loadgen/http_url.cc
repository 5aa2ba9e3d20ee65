#include "loadgen/http_url.h"

#include <utility>
#include <variant>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "net/url.h"

namespace warmroute::loadgen {
namespace {

absl::Status Bad(std::string_view url, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("expected http://host[:port][/path], got '",
                                                 AbslView(url), "' (", AbslView(why), ")"));
}

// The reason in this contract's words.
std::string_view Why(net::UrlError error) {
  switch (error) {
    case net::UrlError::kQuery:
      return "queries are not supported";
    case net::UrlError::kUserInfo:
      return "user info";
    case net::UrlError::kUnclosedBracket:
      return "unclosed '['";
    case net::UrlError::kJunkAfterBracket:
      return "junk after ']'";
    case net::UrlError::kBadHostChar:
    case net::UrlError::kBadIpv6Char:
      return "bad character in host";
    case net::UrlError::kEmptyPort:
      return "empty port";
    case net::UrlError::kPortNotNumber:
    case net::UrlError::kPortOutOfRange:
      return "bad port";
    default:
      return net::UrlErrorText(error);
  }
}

}  // namespace

absl::StatusOr<HttpUrl> ParseHttpUrl(std::string_view url) {
  const std::string scheme = net::UrlScheme(url);
  if (scheme != "http") {
    return Bad(url, scheme == "https" ? "https is not supported" : "no http:// scheme");
  }
  std::variant<net::Url, net::UrlError> parsed = net::ParseUrl(url);
  if (const net::UrlError* error = std::get_if<net::UrlError>(&parsed)) {
    return Bad(url, Why(*error));
  }
  net::Url& parts = std::get<net::Url>(parsed);
  if (parts.host.empty()) return Bad(url, "no host");
  HttpUrl out;
  out.text = std::string(url);
  out.host = std::move(parts.host);
  if (parts.port.has_value()) out.port = *parts.port;
  std::string_view path = parts.path;
  while (path.ends_with('/')) path.remove_suffix(1);
  out.path = std::string(path);
  return out;
}

std::string ApiTarget(const HttpUrl& url, std::string_view endpoint) {
  std::string_view base = url.path;
  if (absl::EndsWith(AbslView(base), "/v1") && absl::StartsWith(AbslView(endpoint), "/v1/"))
    base.remove_suffix(3);
  return absl::StrCat(AbslView(base), AbslView(endpoint));
}

}  // namespace warmroute::loadgen
