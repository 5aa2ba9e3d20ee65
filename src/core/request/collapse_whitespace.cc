#include "core/request/collapse_whitespace.h"

#include <algorithm>

namespace warmroute::request {
namespace {

bool IsSpaceOrTab(char c) { return c == ' ' || c == '\t'; }

}  // namespace

std::string CollapseWhitespace(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t breaks = 0;  // line breaks before the next non-blank line
  size_t at = 0;
  for (bool first = true;; first = false) {
    const size_t newline = text.find('\n', at);
    const std::string_view line =
        text.substr(at, newline == std::string_view::npos ? std::string_view::npos : newline - at);
    if (!first) ++breaks;
    size_t i = 0;
    while (i < line.size() && IsSpaceOrTab(line[i])) ++i;
    const size_t indent = i;
    size_t end = line.size();
    while (end > indent && (IsSpaceOrTab(line[end - 1]) || line[end - 1] == '\r')) --end;
    if (end > indent) {  // a blank line: only its line break may count
      out.append(std::min<size_t>(breaks, 2), '\n');
      breaks = 0;
      out.append(line.substr(0, indent));
      bool space = false;
      for (; i < end; ++i) {
        if (IsSpaceOrTab(line[i])) {
          space = true;
          continue;
        }
        if (space) out.push_back(' ');
        space = false;
        out.push_back(line[i]);
      }
    }
    if (newline == std::string_view::npos) break;
    at = newline + 1;
  }
  return out;  // trailing blank lines and spaces were never written
}

}  // namespace warmroute::request
