// The one mapping from an absl::Status to an HTTP error response in the OpenAI / vLLM shape:
//
//   {"error": {"message": "...", "type": "BadRequestError", "param": "messages" | null,
//              "code": 400}}
//
// `code` is the HTTP status and `type` the error class name vLLM (and the OpenAI SDK) use for
// that status, so the two always agree; `param` is the offending request parameter attached
// with common/status.h InvalidParam or WithParam.
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
// With another HTTP status than the table's, `type` follows that status: 405
// MethodNotAllowedError, 422 UnprocessableEntityError, 431 RequestHeaderFieldsTooLargeError,
// 502 BadGatewayError, any other 4xx BadRequestError and 5xx InternalServerError.
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
// which are OutOfRange like a body over the limit); the body's `code` is `http_status` and its
// `type` that status's (above).
HttpError ToHttpError(const absl::Status& status, int http_status);

// The HTTP status code alone.
int HttpStatusOf(absl::StatusCode code);

}  // namespace warmroute::net
