#include "core/workload/text.h"

#include <set>
#include <string>

#include "core/request/tokenizer.h"
#include "gtest/gtest.h"

namespace warmroute::workload {
namespace {

int64_t Tokens(std::string_view text) {
  return static_cast<int64_t>(request::BuiltinTokenizer().Encode(text).size());
}

TEST(TextTest, ProseHasExactlyTheRequestedTokens) {
  for (int64_t n : {1, 2, 7, 50, 128, 511, 3000}) {
    Rng rng(static_cast<uint64_t>(n));
    EXPECT_EQ(Tokens(Prose(rng, n)), n) << n;
    std::string spaced;
    AppendProse(rng, n, &spaced);
    EXPECT_EQ(Tokens(spaced), n) << n;
    EXPECT_EQ(spaced[0], ' ');
  }
}

TEST(TextTest, DocumentHasExactlyTheRequestedTokensAndParagraphs) {
  Rng rng(3);
  const std::string doc = Document(rng, 3000);
  EXPECT_EQ(Tokens(doc), 3000);
  EXPECT_NE(doc.find("\n\n"), std::string::npos);
  EXPECT_NE(doc.find("\n\n1. "), std::string::npos);  // numbered rules
}

TEST(TextTest, AveragesAboutFourCharactersPerToken) {
  Rng rng(5);
  const std::string text = Prose(rng, 10000);
  const double chars_per_token = static_cast<double>(text.size()) / 10000;
  EXPECT_GT(chars_per_token, 3.8);
  EXPECT_LT(chars_per_token, 5.0);
}

TEST(TextTest, ShorterProseIsAPrefixOfLongerProseFromTheSameState) {
  Rng a(11);
  Rng b(11);
  std::string short_text;
  std::string long_text;
  AppendProse(a, 37, &short_text);
  AppendProse(b, 512, &long_text);
  EXPECT_EQ(long_text.substr(0, short_text.size()), short_text);
  // Cut at a token boundary: the prefix's tokens are the first tokens of the whole.
  const auto short_ids = request::BuiltinTokenizer().Encode(short_text);
  const auto long_ids = request::BuiltinTokenizer().Encode(long_text);
  EXPECT_TRUE(std::equal(short_ids.begin(), short_ids.end(), long_ids.begin()));
}

TEST(TextTest, ConcatenatedProseTokenizesAsTheSumOfItsPieces) {
  Rng rng(13);
  std::string text;
  for (int i = 0; i < 20; ++i) AppendProse(rng, 1 + i * 7, &text);
  int64_t expected = 0;
  for (int i = 0; i < 20; ++i) expected += 1 + i * 7;
  EXPECT_EQ(Tokens(text), expected);
}

TEST(TextTest, SameSeedSameTextDifferentSeedDifferentText) {
  Rng a(1);
  Rng b(1);
  Rng c(2);
  const std::string x = Prose(a, 200);
  EXPECT_EQ(x, Prose(b, 200));
  EXPECT_NE(x, Prose(c, 200));
}

TEST(TextTest, VocabularyWordsAreOneTokenWithOrWithoutASpace) {
  Rng rng(17);
  for (int i = 0; i < 2000; ++i) {
    const std::string word(RandomWord(rng));
    ASSERT_GE(word.size(), 1u);
    ASSERT_LE(word.size(), 5u) << word;
    EXPECT_EQ(Tokens(" " + word), 1) << word;
  }
}

TEST(TextTest, IdWordsAreDistinctAndNonEmpty) {
  std::set<std::string> seen;
  for (uint64_t id = 0; id < 20000; ++id) {
    const std::string word = IdWord(id);
    ASSERT_FALSE(word.empty());
    EXPECT_TRUE(seen.insert(word).second) << id << " " << word;
  }
  EXPECT_EQ(IdWord(0), "a");
  EXPECT_EQ(IdWord(25), "z");
  EXPECT_EQ(IdWord(26), "aa");
  EXPECT_EQ(IdWord(701), "zz");
  EXPECT_EQ(IdWord(702), "aaa");
  EXPECT_EQ(IdWord(12356629).size(), 5u);
  EXPECT_EQ(IdWord(12356630).size(), 6u);
  EXPECT_FALSE(IdWord(~0ULL).empty());
}

TEST(TextTest, SpacedWordTokensMatchesTheTokenizer) {
  for (size_t letters = 1; letters <= 14; ++letters) {
    EXPECT_EQ(SpacedWordTokens(letters), Tokens(" " + std::string(letters, 'q'))) << letters;
  }
}

}  // namespace
}  // namespace warmroute::workload
