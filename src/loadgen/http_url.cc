#include "loadgen/http_url.h"

#include <charconv>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace warmroute::loadgen {
namespace {

// Debian's Abseil has its own string_view type.
absl::string_view A(std::string_view s) { return absl::string_view(s.data(), s.size()); }

absl::Status Bad(std::string_view url, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("expected http://host[:port][/path], got '", A(url), "' (", A(why), ")"));
}

}  // namespace

absl::StatusOr<HttpUrl> ParseHttpUrl(std::string_view url) {
  HttpUrl out;
  out.text = std::string(url);
  std::string_view rest = url;
  if (!absl::StartsWithIgnoreCase(A(rest), "http://")) {
    return Bad(url, absl::StartsWithIgnoreCase(A(rest), "https://") ? "https is not supported"
                                                                    : "no http:// scheme");
  }
  rest.remove_prefix(7);
  const size_t slash = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (!path.empty() && path.front() != '/') return Bad(url, "queries are not supported");
  if (path.find_first_of("?#") != std::string_view::npos) {
    return Bad(url, "queries are not supported");
  }
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  out.path = std::string(path);
  if (authority.find('@') != std::string_view::npos) return Bad(url, "user info");
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return Bad(url, "unclosed '['");
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Bad(url, "junk after ']'");
      port = after.substr(1);
      if (port.empty()) return Bad(url, "empty port");
    }
  } else {
    const size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) return Bad(url, "empty port");
    }
  }
  if (out.host.empty()) return Bad(url, "no host");
  for (char c : out.host) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_' &&
        c != ':') {
      return Bad(url, "bad character in host");
    }
  }
  if (!port.empty()) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
      return Bad(url, "bad port");
    }
    out.port = static_cast<uint16_t>(value);
  }
  return out;
}

std::string ApiTarget(const HttpUrl& url, std::string_view endpoint) {
  std::string_view base = url.path;
  if (absl::EndsWith(A(base), "/v1") && absl::StartsWith(A(endpoint), "/v1/"))
    base.remove_suffix(3);
  return absl::StrCat(A(base), A(endpoint));
}

}  // namespace warmroute::loadgen
