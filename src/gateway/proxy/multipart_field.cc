#include "gateway/proxy/multipart_field.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/absl_view.h"

namespace warmroute::gateway {
namespace {

// `name`'s parameter value in a header's parameter list (`; name="value"` or `; name=value`).
std::string_view ParameterOf(std::string_view header, std::string_view name) {
  size_t at = 0;
  while ((at = header.find(';', at)) != std::string_view::npos) {
    std::string_view rest = header.substr(at + 1);
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
    ++at;
    if (rest.size() <= name.size() || rest[name.size()] != '=' ||
        !absl::EqualsIgnoreCase(AbslView(rest.substr(0, name.size())), AbslView(name))) {
      continue;
    }
    rest.remove_prefix(name.size() + 1);
    if (!rest.empty() && rest.front() == '"') {
      const size_t close = rest.find('"', 1);
      return close == std::string_view::npos ? std::string_view() : rest.substr(1, close - 1);
    }
    return rest.substr(0, rest.find_first_of("; \t"));
  }
  return {};
}

}  // namespace

absl::StatusOr<std::string> MultipartBoundary(std::string_view content_type) {
  const std::string_view type = content_type.substr(0, content_type.find(';'));
  if (!absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(AbslView(type)), "multipart/form-data")) {
    return absl::InvalidArgumentError(
        absl::StrCat("the request body must be multipart/form-data, not '", AbslView(type), "'"));
  }
  const std::string_view boundary = ParameterOf(content_type, "boundary");
  // RFC 2046 5.1.1: 1 to 70 characters.
  if (boundary.empty() || boundary.size() > 70) {
    return absl::InvalidArgumentError("the multipart/form-data Content-Type has no valid boundary");
  }
  return std::string(boundary);
}

FormFieldSearch FindFormField(std::string_view prefix, std::string_view boundary,
                              std::string_view name) {
  const std::string delimiter = absl::StrCat("--", AbslView(boundary));
  size_t at = prefix.find(delimiter);
  while (at != std::string_view::npos) {
    size_t part = at + delimiter.size();
    if (prefix.substr(part, 2) == "--") return {FormFieldSearch::kMissing, {}};  // the end
    if (part + 2 > prefix.size()) return {};
    part += 2;  // CRLF after the delimiter
    const size_t headers_end = prefix.find("\r\n\r\n", part);
    if (headers_end == std::string_view::npos) return {};
    const std::string_view headers = prefix.substr(part, headers_end - part);
    const size_t content = headers_end + 4;
    const size_t next = prefix.find(absl::StrCat("\r\n", delimiter), content);
    bool named = false;
    size_t line = 0;
    while (line < headers.size()) {
      size_t end = headers.find("\r\n", line);
      if (end == std::string_view::npos) end = headers.size();
      const std::string_view field = headers.substr(line, end - line);
      if (absl::StartsWithIgnoreCase(AbslView(field), "content-disposition:") &&
          ParameterOf(field, "name") == name) {
        named = true;
      }
      line = end + 2;
    }
    if (named) {
      if (next == std::string_view::npos) return {};
      return {FormFieldSearch::kFound, std::string(prefix.substr(content, next - content))};
    }
    if (next == std::string_view::npos) return {};
    at = next + 2;
  }
  return {};
}

}  // namespace warmroute::gateway
