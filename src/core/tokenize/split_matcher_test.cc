// Each hand-written matcher gives the matches Oniguruma gives for its pattern, on random text
// drawn from the characters the patterns treat differently.
#include "core/tokenize/split_matcher.h"

#include <random>
#include <string>
#include <vector>

#include "core/tokenize/regex.h"
#include "core/tokenize/utf8.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::tokenize {
namespace {

// Letters, marks, digits of several scripts, punctuation, symbols, every kind of space and
// newline, apostrophes and the case-folding oddities of (?i:'s|...).
const std::vector<char32_t>& Alphabet() {
  static const std::vector<char32_t> alphabet = [] {
    std::vector<char32_t> a;
    for (char32_t c = 0x20; c < 0x7F; ++c) a.push_back(c);
    for (char32_t c : {U'\t', U'\n', U'\r', U'\v', U'\f', U'\'', U'\'', U's', U'S', U't', U'r',
                       U'e',  U'v',  U'l',  U'L',  U'm',  U'd',  U'D',  U' ', U' ', U' '}) {
      a.push_back(c);
    }
    for (char32_t c :
         {0x85,    0xA0,    0x1680, 0x2000, 0x2003, 0x2028,  0x2029,  0x202F,  0x205F, 0x3000,
          0x180E,  0x200B,  0xFEFF, 0x17F,  0x212A, 0x130,   0x131,   0xDF,    0xFB05, 0xFB06,
          0xE9,    0x301,   0x308,  0x94D,  0x915,  0x937,   0x661,   0x662,   0x2460, 0x2167,
          0xBD,    0x4E00,  0x9FA5, 0x9FA6, 0x3042, 0x30A2,  0x30FB,  0x309F,  0x30FF, 0x3001,
          0x3002,  0xFF01,  0x2019, 0x2014, 0x20AC, 0x1F600, 0x1F44D, 0x1F3FD, 0x200D, 0xFE0F,
          0x1D518, 0x10400, 0x5D0,  0x627,  0x1,    0x1F,    0x7F}) {
      a.push_back(c);
    }
    return a;
  }();
  return alphabet;
}

std::string RandomText(std::mt19937& rng) {
  const std::vector<char32_t>& a = Alphabet();
  std::uniform_int_distribution<size_t> len(0, 24), pick(0, a.size() - 1);
  std::string text;
  for (size_t n = len(rng); n > 0; --n) AppendUtf8(a[pick(rng)], &text);
  return text;
}

class SplitMatcherTest : public ::testing::TestWithParam<std::string> {};

std::string PatternName(const ::testing::TestParamInfo<std::string>& info) {
  static const char* const kNames[] = {"Llama3",  "Qwen",  "Gpt2",   "DeepSeek",
                                       "Digits3", "Digit", "KanaCjk"};
  return kNames[info.index];
}

TEST_P(SplitMatcherTest, MatchesLikeOniguruma) {
  const std::shared_ptr<const SplitMatcher> matcher = SplitMatcher::ForRegex(GetParam());
  ASSERT_NE(matcher, nullptr);
  absl::StatusOr<std::unique_ptr<Regex>> regex = Regex::Compile(GetParam());
  ASSERT_TRUE(regex.ok()) << regex.status();
  std::mt19937 rng(20240611);
  std::vector<Match> expected, actual;
  for (int i = 0; i < 20000; ++i) {
    const std::string text = RandomText(rng);
    (*regex)->FindAll(text, &expected);
    matcher->FindAll(text, &actual);
    ASSERT_EQ(actual, expected) << "text: " << text;
  }
}

INSTANTIATE_TEST_SUITE_P(
    RealPatterns, SplitMatcherTest,
    ::testing::Values(
        R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
        R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
        R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)",
        "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}"
        "\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
        R"(\p{N}{1,3})", R"(\p{N})", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"),
    PatternName);

TEST(SplitMatcherTest, UnknownPatternsRunOnOniguruma) {
  EXPECT_EQ(SplitMatcher::ForRegex(R"(\p{L}+)"), nullptr);
  EXPECT_EQ(
      SplitMatcher::ForRegex(
          R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,4}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"),
      nullptr);
}

}  // namespace
}  // namespace warmroute::tokenize
