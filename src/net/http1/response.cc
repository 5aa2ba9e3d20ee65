#include "net/http1/response.h"

#include <utility>

#include "net/openai_error.h"

namespace warmroute::net {

Response ErrorResponse(const absl::Status& status, int http_status) {
  HttpError error = http_status != 0 ? ToHttpError(status, http_status) : ToHttpError(status);
  Response response;
  response.head.status = error.status;
  response.head.content_type = "application/json";
  if (error.status == 401) response.head.headers.emplace_back("www-authenticate", "Bearer");
  response.body = std::move(error.body);
  return response;
}

}  // namespace warmroute::net
