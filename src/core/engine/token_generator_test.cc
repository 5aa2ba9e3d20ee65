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

TEST(TokenGeneratorTest, ABareStartMakesTokenZeroABareWordThatEncodesToItsToken) {
  request::BuiltinTokenizer tokenizer;
  TokenGenerator gen(tokenizer);
  EXPECT_EQ(gen.num_bare_words(), TokenGenerator::kMaxWords);
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const std::string first(gen.Text(seed, 0, /*bare_start=*/true));
    ASSERT_FALSE(first.empty());
    ASSERT_NE(first[0], ' ');
    ASSERT_EQ(tokenizer.Encode(first), std::vector<int32_t>{gen.Token(seed, 0, true)});
    // Later tokens are the spaced words, as without a bare start.
    ASSERT_EQ(gen.Text(seed, 1, true), gen.Text(seed, 1));
    ASSERT_EQ(gen.Token(seed, 5, true), gen.Token(seed, 5));
  }
  // Without it token 0 keeps its space (the built-in behaviour).
  EXPECT_EQ(gen.Text(3, 0)[0], ' ');
}

// Every text is one token per byte: no word is a single token.
class ByteTokenizer final : public request::Tokenizer {
 public:
  std::vector<int32_t> Encode(std::string_view text) const override {
    return std::vector<int32_t>(text.begin(), text.end());
  }
  std::vector<int32_t> Encode(std::string_view text,
                              std::vector<std::string_view>* pieces) const override {
    pieces->clear();
    for (size_t i = 0; i < text.size(); ++i) pieces->push_back(text.substr(i, 1));
    return Encode(text);
  }
  int32_t VocabSize() const override { return 256; }
};

TEST(TokenGeneratorTest, CreateRefusesAVocabularyWithoutSingleTokenWords) {
  ByteTokenizer bytes;
  absl::StatusOr<std::unique_ptr<TokenGenerator>> gen = TokenGenerator::Create(bytes);
  ASSERT_FALSE(gen.ok());
  EXPECT_EQ(gen.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(gen.status().message()).find("single token"), std::string::npos);
}

}  // namespace
}  // namespace warmroute::engine
