// An HTTP request as a handler sees it: parsed, with its whole body; and the header-name rules
// every part of the gateway applies (case-insensitive names, hop-by-hop headers).
//
// Usage:
//   absl::StatusOr<std::string_view> auth = request.SingleHeader("Authorization");
//   if (HeaderNameIs(name, "content-type")) ...
//
// Thread-safety: plain values; the free functions are pure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace warmroute::net {

class BodyReader;  // body_reader.h

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// Spare capacity HttpServer leaves after a non-empty request body (body.capacity() - body.size()
// at least this): a parser that reads past the end of its input (simdjson) parses it in place.
inline constexpr size_t kBodySpareCapacity = 64;

struct HttpRequest {
  std::string method;   // "GET", "POST", ... as sent
  std::string target;   // the request target as sent: path and query
  std::string path;     // target without the query string
  HttpHeaders headers;  // in the order received
  std::string body;
  bool keep_alive = true;
  bool http10 = false;  // an HTTP/1.0 client: no chunked responses
  // Set when the server streams the body to the handler (HttpServerOptions::stream_body): read
  // it there; `body` stays empty. Null: `body` holds the whole body.
  BodyReader* body_reader = nullptr;

  // The first header called `name` (case-insensitive), or an empty view.
  std::string_view Header(std::string_view name) const;
  // The value of a field that may appear once (RFC 9110 5.3), such as Authorization: the one
  // header called `name`, an empty view when there is none, InvalidArgument (400) naming the
  // field when there are several (which of them counts is where a proxy in front and the
  // gateway could disagree).
  absl::StatusOr<std::string_view> SingleHeader(std::string_view name) const;
};

// True for the headers that concern one connection only (RFC 9110 §7.6.1: Connection,
// Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade, Proxy-Connection): a proxy never forwards
// them. Case-insensitive.
bool IsHopByHopHeader(std::string_view name);

// Header names compare case-insensitively (RFC 9110 5.1): ASCII folding, inline (not the locale's
// tolower, a library call per character; names are compared on every request's path).
inline bool HeaderNameIs(std::string_view name, std::string_view expected) {
  if (name.size() != expected.size()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char a = name[i] >= 'A' && name[i] <= 'Z' ? static_cast<char>(name[i] + 32) : name[i];
    const char b = expected[i] >= 'A' && expected[i] <= 'Z' ? static_cast<char>(expected[i] + 32)
                                                            : expected[i];
    if (a != b) return false;
  }
  return true;
}

}  // namespace warmroute::net
