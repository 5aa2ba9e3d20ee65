// http:// URLs of `warmroute bench`: the target (--url) and the engines' metrics endpoints
// (--engine-metrics). Plain HTTP only (the client speaks HTTP/1.1 without TLS).
//
//   http://127.0.0.1:8000           host 127.0.0.1, port 8000, path ""
//   http://gw.local/openai/v1       host gw.local, port 80, path "/openai/v1"
//   http://[::1]:8001/metrics       host ::1, port 8001, path "/metrics"
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace warmroute::loadgen {

struct HttpUrl {
  std::string text;  // as given
  std::string host;  // without brackets for IPv6
  uint16_t port = 80;
  std::string path;  // "" or starting with '/', without a trailing '/'
};

// InvalidArgument "expected http://host[:port][/path], got '<url>' (<why>)" otherwise.
absl::StatusOr<HttpUrl> ParseHttpUrl(std::string_view url);

// The request target of OpenAI endpoint `endpoint` ("/v1/chat/completions") under the base
// `url`: a base path that already ends in "/v1" is not doubled.
std::string ApiTarget(const HttpUrl& url, std::string_view endpoint);

}  // namespace warmroute::loadgen
