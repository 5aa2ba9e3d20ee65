#include "net/http1/response_writer.h"

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "net/openai_error.h"

namespace warmroute::net {

Task<absl::Status> ResponseWriter::ReplyError(const absl::Status& status) {
  HttpError error = ToHttpError(status);
  ResponseHead head;
  head.status = error.status;
  head.content_type = "application/json";
  // RFC 9110 11.6.1: a 401 names the scheme it wants (every credential here is a bearer token).
  if (error.status == 401) head.headers.emplace_back("www-authenticate", "Bearer");
  co_return co_await Reply(std::move(head), std::move(error.body));
}

Task<void> ReplyMethodNotAllowed(ResponseWriter& writer, const HttpRequest& request,
                                 std::string allow) {
  const absl::Status status = absl::InvalidArgumentError(absl::StrCat(
      "method ", AbslView(request.method), " is not allowed on ", AbslView(request.path)));
  HttpError error = ToHttpError(status, 405);
  ResponseHead head;
  head.status = error.status;
  head.headers.emplace_back("allow", std::move(allow));
  co_await writer.Reply(std::move(head), std::move(error.body));
}

}  // namespace warmroute::net
