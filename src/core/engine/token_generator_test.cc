#include "core/engine/token_generator.h"

#include <string>

#include "absl/container/flat_hash_set.h"
#include "core/request/tokenizer.h"
#include "gtest/gtest.h"

namespace warmroute::engine {
namespace {

TEST(TokenGeneratorTest, EveryPieceIsAShortWordThatEncodesToItsToken) {
  request::BuiltinTokenizer tokenizer;
  TokenGenerator gen(tokenizer);
  absl::flat_hash_set<std::string> texts;
  absl::flat_hash_set<int32_t> ids;
  for (int64_t i = 0; i < 20000; ++i) {
    const std::string text(gen.Text(7, i));
    ASSERT_GE(text.size(), 3u);
    ASSERT_LE(text.size(), 5u);
    ASSERT_EQ(text[0], ' ');
    for (size_t c = 1; c < text.size(); ++c) ASSERT_TRUE(text[c] >= 'a' && text[c] <= 'z') << text;
    const std::vector<int32_t> encoded = tokenizer.Encode(text);
    ASSERT_EQ(encoded.size(), 1u) << text;
    ASSERT_EQ(encoded[0], gen.Token(7, i));
    texts.insert(text);
    ids.insert(encoded[0]);
  }
  // The list has at least 512 words and a long output uses most of them.
  EXPECT_GE(texts.size(), 512u);
  EXPECT_EQ(texts.size(), ids.size());  // text <-> token is one to one
}

TEST(TokenGeneratorTest, GeneratedTextReTokenizesToTheGeneratedTokens) {
  request::BuiltinTokenizer tokenizer;
  TokenGenerator gen(tokenizer);
  std::string answer;
  std::vector<int32_t> tokens;
  for (int64_t i = 0; i < 300; ++i) {
    answer += gen.Text(99, i);
    tokens.push_back(gen.Token(99, i));
  }
  EXPECT_EQ(tokenizer.Encode(answer), tokens);
  // The same words behind a prompt prefix keep their ids (a piece boundary precedes each).
  std::vector<int32_t> with_prefix = tokenizer.Encode("Question: why?" + answer);
  ASSERT_GE(with_prefix.size(), tokens.size());
  EXPECT_EQ(std::vector<int32_t>(with_prefix.end() - static_cast<std::ptrdiff_t>(tokens.size()),
                                 with_prefix.end()),
            tokens);
}

TEST(TokenGeneratorTest, IsDeterministicPerSeedAndVariesAcrossSeeds) {
  request::BuiltinTokenizer tokenizer;
  TokenGenerator a(tokenizer);
  TokenGenerator b(tokenizer);
  int same_seed_differences = 0;
  int cross_seed_matches = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    same_seed_differences += a.Token(5, i) != b.Token(5, i);
    cross_seed_matches += a.Token(5, i) == a.Token(6, i);
  }
  EXPECT_EQ(same_seed_differences, 0);
  EXPECT_LT(cross_seed_matches, 20);  // ~1000/1024 expected by chance
  // Consecutive tokens of one answer vary.
  absl::flat_hash_set<int32_t> first_ten;
  for (int64_t i = 0; i < 10; ++i) first_ten.insert(a.Token(5, i));
  EXPECT_GE(first_ten.size(), 8u);
}

}  // namespace
}  // namespace warmroute::engine
