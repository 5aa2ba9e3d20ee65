// The one mapping from an absl::Status to an HTTP error response in the OpenAI / vLLM shape:
//
//   {"error": {"message": "...", "type": "BadRequestError", "param": "messages" | null,
//              "code": 400}}
//
// `type` is vLLM's error class name and `code` the HTTP status, as vLLM's OpenAI server sends
// them; `param` is the offending request parameter attached with common/status.h InvalidParam
// or WithParam.
//
//   status code          HTTP  type
//   InvalidArgument      400   BadRequestError
//   FailedPrecondition   400   BadRequestError
//   Unauthenticated      401   AuthenticationError
//   PermissionDenied     403   PermissionDeniedError
//   NotFound             404   NotFoundError
//   AlreadyExists        409   ConflictError
//   Aborted              409   ConflictError
//   OutOfRange           413   RequestTooLargeError   (a body or prompt over a limit)
//   ResourceExhausted    429   RateLimitError
//   Unimplemented        501   NotImplementedError
//   Unavailable          503   ServiceUnavailableError
//   DeadlineExceeded     504   GatewayTimeoutError
//   anything else        500   InternalServerError
//
// Usage:
//   HttpError e = ToHttpError(InvalidParam("max_tokens", "max_tokens must be at least 1"));
//   reply(e.status, "application/json", e.body);
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace warmroute::net {

struct HttpError {
  int status = 500;  // HTTP status code
  std::string body;  // the JSON error body
};

// The HTTP status and OpenAI-style JSON body for `status`. REQUIRES: !status.ok().
HttpError ToHttpError(const absl::Status& status);

// The same with another HTTP status than the table's (e.g. 431 for headers over the limit,
// which are OutOfRange like a body over the limit); the body's `code` is `http_status`.
HttpError ToHttpError(const absl::Status& status, int http_status);

// The HTTP status code alone.
int HttpStatusOf(absl::StatusCode code);

}  // namespace warmroute::net
