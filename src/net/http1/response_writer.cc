#include "net/http1/response_writer.h"

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "net/openai_error.h"

namespace warmroute::net {

Task<absl::Status> ResponseWriter::ReplyError(const absl::Status& status) {
  co_return co_await Reply(ErrorResponse(status));
}

Task<void> ReplyMethodNotAllowed(ResponseWriter& writer, const HttpRequest& request,
                                 std::string allow) {
  const absl::Status status = absl::InvalidArgumentError(absl::StrCat(
      "method ", AbslView(request.method), " is not allowed on ", AbslView(request.path)));
  Response response = ErrorResponse(status, 405);
  response.head.headers.emplace_back("allow", std::move(allow));
  (void)co_await writer.Reply(std::move(response));  // a failure is writer.failed()
}

}  // namespace warmroute::net
