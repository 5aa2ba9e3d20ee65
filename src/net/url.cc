#include "net/url.h"

#include <algorithm>
#include <charconv>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/absl_view.h"

namespace warmroute::net {
namespace {

bool IsSchemeChar(char c) { return absl::ascii_isalnum(c) || c == '+' || c == '-' || c == '.'; }

bool IsHostNameChar(char c) { return absl::ascii_isalnum(c) || c == '.' || c == '-' || c == '_'; }

bool IsIpv6Char(char c) { return absl::ascii_isxdigit(c) || c == ':' || c == '.'; }

bool IsDigit(char c) { return absl::ascii_isdigit(c); }

template <typename Predicate>
bool All(std::string_view text, Predicate predicate) {
  return std::all_of(text.begin(), text.end(), predicate);
}

// The length of the scheme `url` starts with (4 for "http://x"), or 0 if it has none.
size_t SchemeLength(std::string_view url) {
  size_t length = 0;
  while (length < url.size() && IsSchemeChar(url[length])) ++length;
  if (length == 0 || !absl::ascii_isalpha(url[0]) || url.substr(length, 3) != "://") return 0;
  return length;
}

}  // namespace

std::string_view UrlErrorText(UrlError error) {
  switch (error) {
    case UrlError::kNoScheme:
      return "missing scheme://";
    case UrlError::kQuery:
      return "a query or fragment is not allowed";
    case UrlError::kUserInfo:
      return "user info is not allowed";
    case UrlError::kUnclosedBracket:
      return "unclosed '[' in the host";
    case UrlError::kNotIpv6:
      return "expected an IPv6 address in brackets";
    case UrlError::kBadIpv6Char:
      return "invalid character in the IPv6 address";
    case UrlError::kJunkAfterBracket:
      return "expected :port or a path after ']'";
    case UrlError::kBadHostChar:
      return "invalid character in the host";
    case UrlError::kEmptyPort:
      return "missing port";
    case UrlError::kPortNotNumber:
      return "the port must be a number";
    case UrlError::kPortOutOfRange:
      return "the port must be in [1, 65535]";
  }
  return "invalid URL";
}

std::string UrlScheme(std::string_view url) {
  return absl::AsciiStrToLower(AbslView(url.substr(0, SchemeLength(url))));
}

std::variant<Url, UrlError> ParseUrl(std::string_view url) {
  const size_t scheme_length = SchemeLength(url);
  if (scheme_length == 0) return UrlError::kNoScheme;
  Url out;
  out.scheme = absl::AsciiStrToLower(AbslView(url.substr(0, scheme_length)));
  const std::string_view rest = url.substr(scheme_length + 3);
  if (rest.find_first_of("?#") != std::string_view::npos) return UrlError::kQuery;
  const size_t path_start = rest.find('/');
  const std::string_view authority = rest.substr(0, path_start);
  if (path_start != std::string_view::npos) out.path = std::string(rest.substr(path_start));
  if (authority.find('@') != std::string_view::npos) return UrlError::kUserInfo;

  std::optional<std::string_view> port_text;  // after the ':', when there is one
  if (authority.starts_with('[')) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return UrlError::kUnclosedBracket;
    const std::string_view host = authority.substr(1, close - 1);
    if (host.find(':') == std::string_view::npos) return UrlError::kNotIpv6;
    if (!All(host, IsIpv6Char)) return UrlError::kBadIpv6Char;
    out.host = std::string(host);
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return UrlError::kJunkAfterBracket;
      port_text = after.substr(1);
    }
  } else {
    const size_t colon = authority.find(':');
    const std::string_view host = authority.substr(0, colon);
    if (!All(host, IsHostNameChar)) return UrlError::kBadHostChar;
    out.host = std::string(host);
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }

  if (port_text.has_value()) {
    if (port_text->empty()) return UrlError::kEmptyPort;
    if (!All(*port_text, IsDigit)) return UrlError::kPortNotNumber;
    uint32_t port = 0;
    const char* end = port_text->data() + port_text->size();
    const auto [ptr, ec] = std::from_chars(port_text->data(), end, port);
    if (ec != std::errc() || ptr != end || port == 0 || port > 65535) {
      return UrlError::kPortOutOfRange;
    }
    out.port = static_cast<uint16_t>(port);
  }
  return out;
}

std::string HostPort(std::string_view host, uint16_t port) {
  if (host.find(':') != std::string_view::npos)
    return absl::StrCat("[", AbslView(host), "]:", port);
  return absl::StrCat(AbslView(host), ":", port);
}

}  // namespace warmroute::net
