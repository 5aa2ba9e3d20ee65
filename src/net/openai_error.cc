#include "net/openai_error.h"

#include <optional>
#include <string_view>

#include "common/json_writer.h"
#include "common/status.h"

namespace warmroute::net {
namespace {

// vLLM's and the OpenAI SDK's error class for an HTTP status; a status without a class of its
// own gets its family's (4xx: BadRequestError, 5xx: InternalServerError).
std::string_view ErrorType(int http_status) {
  switch (http_status) {
    case 400:
      return "BadRequestError";
    case 401:
      return "AuthenticationError";
    case 403:
      return "PermissionDeniedError";
    case 404:
      return "NotFoundError";
    case 405:
      return "MethodNotAllowedError";
    case 409:
      return "ConflictError";
    case 413:
      return "RequestTooLargeError";
    case 422:
      return "UnprocessableEntityError";
    case 429:
      return "RateLimitError";
    case 431:
      return "RequestHeaderFieldsTooLargeError";
    case 501:
      return "NotImplementedError";
    case 502:
      return "BadGatewayError";
    case 503:
      return "ServiceUnavailableError";
    case 504:
      return "GatewayTimeoutError";
    default:
      return http_status >= 400 && http_status < 500 ? "BadRequestError" : "InternalServerError";
  }
}

}  // namespace

int HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kOutOfRange:
      return 413;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

HttpError ToHttpError(const absl::Status& status) {
  return ToHttpError(status, HttpStatusOf(status.code()));
}

HttpError ToHttpError(const absl::Status& status, int http_status) {
  HttpError error;
  error.status = http_status;
  std::string message(status.message());
  if (message.empty()) message = absl::StatusCodeToString(status.code());
  const std::optional<std::string> param = ParamOf(status);
  JsonWriter w(&error.body);
  w.BeginObject().Key("error").BeginObject();
  w.Key("message").String(message);
  w.Key("type").String(ErrorType(http_status));
  w.Key("param");
  if (param) {
    w.String(*param);
  } else {
    w.Null();
  }
  w.Key("code").Int(error.status);
  w.EndObject().EndObject();
  return error;
}

}  // namespace warmroute::net
