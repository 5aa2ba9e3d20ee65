// Whitespace made canonical in a prompt's text, so that texts that differ only in stray
// whitespace (a template's trailing space, a doubled blank line) become the same text and share
// their prefix blocks. What the gateway's opt-in `collapse_whitespace` rule sends upstream in
// system messages (gateway/proxy/normalize.h), and what `warmroute analyze` compares texts by
// when it looks for that defect (analyze/prefix_hygiene.h).
//
// The rewrite: within a line, every run of spaces and tabs after the line's indentation becomes
// one space (indentation is kept, so code and nested lists keep their shape); trailing spaces,
// tabs and carriage returns of each line are removed; three or more line breaks in a row become
// two (at most one empty line); whitespace at the end of the text is removed.
//
// Usage:
//   CollapseWhitespace("Hello   world \n\n\n\nBye  ");  // "Hello world\n\nBye"
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <string_view>

namespace warmroute::request {

std::string CollapseWhitespace(std::string_view text);

}  // namespace warmroute::request
