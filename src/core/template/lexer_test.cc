#include "core/template/lexer.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::jinja {
namespace {

// The data tokens of `source`, joined with "|".
std::string Data(std::string_view source) {
  absl::StatusOr<std::vector<Token>> tokens = Tokenize(source);
  EXPECT_TRUE(tokens.ok()) << tokens.status();
  std::string out;
  for (const Token& t : *tokens) {
    if (t.type == TokenType::kData) out += "[" + t.value + "]";
  }
  return out;
}

TEST(LexerTest, TrimsBlocksAndStripsTheirLineStarts) {
  EXPECT_EQ(Data("a\n  {% if x %}\n  b\n  {% endif %}\nc"), "[a\n][  b\n][c]");
  EXPECT_EQ(Data("a {% if x %}b"), "[a ][b]");       // not at a line start: kept
  EXPECT_EQ(Data("a\n  {{ x }}\nb"), "[a\n  ][\nb]");  // variables are not blocks
  EXPECT_EQ(Data("  {#- c -#}  x"), "[x]");
  EXPECT_EQ(Data("a\n  {%+ if x %}\n"), "[a\n  ]");  // + keeps the indent
  EXPECT_EQ(Data("{% if x +%}\nb"), "[\nb]");        // +%} keeps the newline
  EXPECT_EQ(Data("a \n {%- if x -%} \n b"), "[a][b]");
}

TEST(LexerTest, NormalisesLineEndsAndDropsOneTrailingNewline) {
  EXPECT_EQ(Data("a\r\nb\rc\n\n"), "[a\nb\nc\n]");
}

TEST(LexerTest, ReadsLiteralsAndOperators) {
  absl::StatusOr<std::vector<Token>> tokens =
      Tokenize(R"({{ 'a\n\'b' "c" 1_000 2.5e3 x // y ** 2 != {'k': [1]} }})");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  std::vector<std::string> values;
  for (const Token& t : *tokens) values.push_back(t.value);
  EXPECT_THAT(values,
              ::testing::ElementsAre("", "a\n'b", "c", "1000", "2.5e3", "x", "//", "y", "**", "2",
                                     "!=", "{", "k", ":", "[", "1", "]", "}", "", ""));
}

TEST(LexerTest, CountsLines) {
  absl::StatusOr<std::vector<Token>> tokens = Tokenize("a\nb\n{{ x }}");
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ((*tokens)[1].line, 3);
}

}  // namespace
}  // namespace warmroute::jinja
