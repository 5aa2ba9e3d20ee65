// URLs of the form scheme://host[:port][/path]: the one parser behind every address warmroute
// is given — backends (gateway/config/backend_url.h), the load generator's targets (loadgen/http_url.h)
// and Redis (ParseRedisUrl in net/redis/redis_connection.h). Each of those accepts a subset (a scheme,
// whether a port or a path may be given) and words its own errors; the syntax and its
// validation live here once.
//
//   HTTP://127.0.0.1:8001        scheme "http", host "127.0.0.1", port 8001, path ""
//   http://gw.local/openai/v1/   scheme "http", host "gw.local", no port, path "/openai/v1/"
//   redis://[::1]:6379           scheme "redis", host "::1" (an IPv6 literal), port 6379
//
// Refused (see UrlError): user info ("user@host"), queries and fragments ('?', '#'), a host that
// is neither a name (letters, digits, '.', '-', '_') nor an IPv6 address in brackets (hex
// digits, ':' and '.'), and a port that is empty, not a decimal number, or outside [1, 65535].
// An empty host ("http://:80", "file:///x") is well-formed: callers that need a host say so.
//
// Usage:
//   std::variant<Url, UrlError> parsed = ParseUrl("http://[::1]:8001/v1");
//   if (const UrlError* error = std::get_if<UrlError>(&parsed)) return Bad(UrlErrorText(*error));
//   const Url& url = std::get<Url>(parsed);
//   HostPort(url.host, *url.port);  // "[::1]:8001"
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace warmroute::net {

struct Url {
  std::string scheme;            // lower-case ("HTTP://x" gives "http")
  std::string host;              // without brackets for IPv6; may be empty
  std::optional<uint16_t> port;  // unset when the URL gives none
  std::string path;              // "" or starting with '/', as written (trailing '/' kept)
};

// The first thing wrong with a URL, in the order ParseUrl checks.
enum class UrlError {
  kNoScheme,          // no "scheme://" at the start
  kQuery,             // a '?' or '#' anywhere after the scheme
  kUserInfo,          // an '@' before the path
  kUnclosedBracket,   // "[::1" with no ']'
  kNotIpv6,           // brackets around something with no ':' ("[]", "[host]")
  kBadIpv6Char,       // brackets around something other than hex digits, ':' and '.'
  kJunkAfterBracket,  // "[::1]x": neither ':' nor the path after ']'
  kBadHostChar,       // a host name with something other than letters, digits, '.', '-', '_'
  kEmptyPort,         // "host:" or "host:/path"
  kPortNotNumber,     // "host:80x", "host:-1"
  kPortOutOfRange,    // "host:0", "host:65536"
};

// The reason in words, for an error message: "user info is not allowed".
std::string_view UrlErrorText(UrlError error);

// The scheme of `url`, lower-case ("http" for "HTTP://x"), or "" when it does not start with
// scheme:// (a letter, then letters, digits, '+', '-' or '.').
std::string UrlScheme(std::string_view url);

// The parts of `url`, or the first thing wrong with it.
std::variant<Url, UrlError> ParseUrl(std::string_view url);

// "host:port", with brackets around an IPv6 host ("[::1]:8001").
std::string HostPort(std::string_view host, uint16_t port);

}  // namespace warmroute::net
