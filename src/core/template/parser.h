// Parses a template's tokens (lexer.h) into its syntax tree (ast.h), with Jinja2's grammar and
// operator precedence. Whatever the interpreter does not support is refused here, naming the
// construct and its line: "unsupported filter 'wordwrap' at line 3", "unsupported tag 'include'
// at line 1", "unsupported method 'cycle' at line 7".
//
// Thread-safety: pure function.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "core/template/ast.h"
#include "core/template/lexer.h"

namespace warmroute::jinja {

// The statements of the template whose tokens are `tokens`. Nesting deeper than `max_depth`
// (blocks or expressions) is refused.
absl::StatusOr<Body> ParseTemplate(const std::vector<Token>& tokens, int max_depth);

}  // namespace warmroute::jinja
