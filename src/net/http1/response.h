// A response the gateway or the emulator makes itself: a head (status, content type, extra
// headers) and a whole body; and the one way an error becomes such a response.
//
// Usage:
//   Response r = ErrorResponse(absl::NotFoundError("no such route"));   // 404, OpenAI body
//   co_await writer.Reply(std::move(r));
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "net/http1/http_request.h"

namespace warmroute::net {

struct ResponseHead {
  int status = 200;
  std::string content_type = "application/json";
  HttpHeaders headers;  // extra headers (no Content-Length / Transfer-Encoding / Connection)
};

// A complete response: its head and whole body.
struct Response {
  ResponseHead head;
  std::string body;
};

// The OpenAI error response for `status` (net/openai_error.h), with HTTP status `http_status`
// instead of the status code's own when it is not 0: a JSON body, and `WWW-Authenticate: Bearer`
// on a 401 (RFC 9110 11.6.1: a 401 names the scheme it wants; every credential here is a bearer
// token). REQUIRES: !status.ok().
Response ErrorResponse(const absl::Status& status, int http_status = 0);

}  // namespace warmroute::net
