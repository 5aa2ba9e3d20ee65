#include "net/response_writer.h"


#include "net/openai_error.h"

namespace warmroute::net {
namespace {

constexpr char AsciiLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

// Field names are ASCII tokens, compared without case (RFC 9110 5.1): ASCII folding, inline (not
// the locale's tolower, a library call per character on every request's headers).
bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

}  // namespace

bool IsHopByHopHeader(std::string_view name) {
  // By length first: most names are compared with nothing.
  switch (name.size()) {
    case 2:
      return EqualsIgnoreCase(name, "te");
    case 7:
      return EqualsIgnoreCase(name, "trailer") || EqualsIgnoreCase(name, "upgrade");
    case 10:
      return EqualsIgnoreCase(name, "connection") || EqualsIgnoreCase(name, "keep-alive");
    case 16:
      return EqualsIgnoreCase(name, "proxy-connection");
    case 17:
      return EqualsIgnoreCase(name, "transfer-encoding");
    default:
      return false;
  }
}

bool HeaderNameIs(std::string_view name, std::string_view expected) {
  return EqualsIgnoreCase(name, expected);
}

std::string_view HttpRequest::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (EqualsIgnoreCase(key, name)) return value;
  }
  return {};
}

Task<absl::Status> ResponseWriter::ReplyError(const absl::Status& status) {
  HttpError error = ToHttpError(status);
  ResponseHead head;
  head.status = error.status;
  head.content_type = "application/json";
  co_return co_await Reply(std::move(head), std::move(error.body));
}

}  // namespace warmroute::net
