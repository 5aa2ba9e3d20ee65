#include "net/openai_error.h"

#include <optional>
#include <string_view>

#include "common/status.h"
#include "net/json_writer.h"

namespace warmroute::net {
namespace {

std::string_view ErrorType(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
      return "BadRequestError";
    case absl::StatusCode::kUnauthenticated:
      return "AuthenticationError";
    case absl::StatusCode::kPermissionDenied:
      return "PermissionDeniedError";
    case absl::StatusCode::kNotFound:
      return "NotFoundError";
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return "ConflictError";
    case absl::StatusCode::kOutOfRange:
      return "RequestTooLargeError";
    case absl::StatusCode::kResourceExhausted:
      return "RateLimitError";
    case absl::StatusCode::kUnimplemented:
      return "NotImplementedError";
    case absl::StatusCode::kUnavailable:
      return "ServiceUnavailableError";
    case absl::StatusCode::kDeadlineExceeded:
      return "GatewayTimeoutError";
    default:
      return "InternalServerError";
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
  w.Key("type").String(ErrorType(status.code()));
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
