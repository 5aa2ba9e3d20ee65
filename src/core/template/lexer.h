// Splits a template's source into tokens, with the whitespace rules of transformers' Jinja
// environment (trim_blocks and lstrip_blocks on, keep_trailing_newline off):
//   - text outside tags is one kData token (line ends normalised to "\n");
//   - {{ }} and {% %} become kVariableBegin / kBlockBegin, their expression tokens, and
//     kVariableEnd / kBlockEnd; {# #} comments and {% raw %} blocks are consumed here;
//   - "{%-", "{{-", "{#-" strip the whitespace before the tag, "-%}", "-}}", "-#}" the whitespace
//     after it; "{%+" / "+%}" turn the two block rules off for one tag;
//   - trim_blocks: the first newline after a block or comment tag is dropped;
//   - lstrip_blocks: spaces and tabs from the start of a line to a block or comment tag are
//     dropped;
//   - one newline at the very end of the template is dropped.
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace warmroute::jinja {

enum class TokenType {
  kData,
  kVariableBegin,
  kVariableEnd,
  kBlockBegin,
  kBlockEnd,
  kName,
  kString,   // value: the literal's text with escapes applied
  kInteger,  // value: the digits (underscores removed)
  kFloat,
  kOperator,  // value: one of + - * / // % ** ~ == != < <= > >= = . : | , ( ) [ ] { }
  kEof,
};

struct Token {
  TokenType type;
  std::string value;
  int line;
};

// The tokens of `source`, ending with kEof. InvalidArgument for unterminated tags, comments and
// strings or an unexpected character, naming the line ("unexpected character '$' at line 3").
absl::StatusOr<std::vector<Token>> Tokenize(std::string_view source);

}  // namespace warmroute::jinja
