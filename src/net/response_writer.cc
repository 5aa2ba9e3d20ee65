#include "net/response_writer.h"

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "net/openai_error.h"

namespace warmroute::net {

bool IsHopByHopHeader(std::string_view name) {
  // By length first: most names are compared with nothing.
  switch (name.size()) {
    case 2:
      return HeaderNameIs(name, "te");
    case 7:
      return HeaderNameIs(name, "trailer") || HeaderNameIs(name, "upgrade");
    case 10:
      return HeaderNameIs(name, "connection") || HeaderNameIs(name, "keep-alive");
    case 16:
      return HeaderNameIs(name, "proxy-connection");
    case 17:
      return HeaderNameIs(name, "transfer-encoding");
    default:
      return false;
  }
}

std::string_view HttpRequest::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (HeaderNameIs(key, name)) return value;
  }
  return {};
}

absl::StatusOr<std::string_view> HttpRequest::SingleHeader(std::string_view name) const {
  std::string_view found;
  int count = 0;
  for (const auto& [key, value] : headers) {
    if (!HeaderNameIs(key, name)) continue;
    if (++count == 1) found = value;
  }
  if (count > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the request has ", count, " ", AbslView(name), " headers; send one"));
  }
  return found;
}

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
