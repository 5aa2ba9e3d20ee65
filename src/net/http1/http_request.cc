#include "net/http1/http_request.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/absl_view.h"

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

}  // namespace warmroute::net
