#include "core/request/tokenizer.h"

#include <string>
#include <vector>

#include "common/rng.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::request {
namespace {

using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::Ge;
using ::testing::Lt;

constexpr char kParagraph[] =
    "The history of computing is longer than the history of computing hardware and modern "
    "computing technology and includes the history of methods intended for pen and paper or for "
    "chalk and slate, with or without the aid of tables. Digital computing is intimately tied to "
    "the representation of numbers. But long before abstractions like the number arose, there "
    "were mathematical concepts to serve the purposes of civilization. These concepts include "
    "one-to-one correspondence, comparison to a standard, and the 3-4-5 right triangle. The "
    "earliest known tool for use in computation was the abacus, and it was thought to have been "
    "invented in Babylon circa 2400 BC. Its original style of usage was by lines drawn in sand "
    "with pebbles. Abaci, of a more modern design, are still used as calculation tools today. "
    "It's worth noting that we've only scratched the surface here; there's much more to say.";

std::vector<int32_t> Concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(BuiltinTokenizerTest, EmptyTextHasNoTokens) {
  BuiltinTokenizer tok;
  EXPECT_TRUE(tok.Encode("").empty());
}

TEST(BuiltinTokenizerTest, IsDeterministic) {
  BuiltinTokenizer a;
  BuiltinTokenizer b;
  EXPECT_EQ(a.Encode(kParagraph), b.Encode(kParagraph));
  EXPECT_EQ(a.Encode("Hello, world"), a.Encode("Hello, world"));
}

TEST(BuiltinTokenizerTest, PiecesSpellTheTextAndEachEncodesToItsId) {
  BuiltinTokenizer tok;
  const std::string text = std::string("<|begin_of_text|>") + kParagraph +
                           " Supercalifragilistic 12345 don't\n\n  spaced<|eot_id|>";
  std::vector<std::string_view> pieces = {"stale"};
  const std::vector<int32_t> ids = tok.Encode(text, &pieces);
  EXPECT_EQ(ids, tok.Encode(text));
  ASSERT_EQ(pieces.size(), ids.size());
  std::string joined;
  for (size_t i = 0; i < pieces.size(); ++i) {
    joined.append(pieces[i]);
    EXPECT_THAT(tok.Encode(pieces[i]), ElementsAre(ids[i])) << "piece '" << pieces[i] << "'";
  }
  EXPECT_EQ(joined, text);
}

TEST(BuiltinTokenizerTest, EnglishGivesAboutFourCharactersPerToken) {
  BuiltinTokenizer tok;
  const std::string text = kParagraph;
  const double chars_per_token =
      static_cast<double>(text.size()) / static_cast<double>(tok.Encode(text).size());
  EXPECT_GE(chars_per_token, 3.5);
  EXPECT_LE(chars_per_token, 4.5);
}

TEST(BuiltinTokenizerTest, IdsAreInVocabularyAndOrdinaryPiecesAvoidSpecialIds) {
  BuiltinTokenizer tok;
  const std::vector<int32_t> ids = tok.Encode(std::string(kParagraph) + "\xe4\xbd\xa0\xe5\xa5\xbd");
  EXPECT_THAT(ids, Each(Ge(BuiltinTokenizer::kNumSpecialTokens)));
  EXPECT_THAT(ids, Each(Lt(BuiltinTokenizer::kVocabSize)));
  EXPECT_EQ(tok.VocabSize(), BuiltinTokenizer::kVocabSize);
}

TEST(BuiltinTokenizerTest, SpecialTokensAreSingleTokensWithFixedIds) {
  BuiltinTokenizer tok;
  EXPECT_THAT(tok.Encode("<|begin_of_text|>"), ElementsAre(BuiltinTokenizer::kBeginOfTextId));
  EXPECT_THAT(tok.Encode("<|start_header_id|>"), ElementsAre(BuiltinTokenizer::kStartHeaderId));
  EXPECT_THAT(tok.Encode("<|end_header_id|>"), ElementsAre(BuiltinTokenizer::kEndHeaderId));
  EXPECT_THAT(tok.Encode("<|eot_id|>"), ElementsAre(BuiltinTokenizer::kEndOfTurnId));
  const std::vector<int32_t> ids =
      tok.Encode("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>");
  ASSERT_EQ(ids.size(), 8u);
  EXPECT_EQ(ids[0], BuiltinTokenizer::kBeginOfTextId);
  EXPECT_EQ(ids[1], BuiltinTokenizer::kStartHeaderId);
  EXPECT_EQ(ids[2], tok.Encode("user")[0]);
  EXPECT_EQ(ids[3], BuiltinTokenizer::kEndHeaderId);
  EXPECT_EQ(ids[4], tok.Encode("\n\n")[0]);
  EXPECT_EQ(ids[5], tok.Encode("Hi")[0]);
  EXPECT_EQ(ids[6], tok.Encode("!")[0]);
  EXPECT_EQ(ids[7], BuiltinTokenizer::kEndOfTurnId);
}

TEST(BuiltinTokenizerTest, PunctuationRunStopsAtSpecialToken) {
  BuiltinTokenizer tok;
  EXPECT_EQ(tok.Encode("?!<|eot_id|>"), Concat(tok.Encode("?!"), {BuiltinTokenizer::kEndOfTurnId}));
  // Look-alikes are ordinary punctuation and letters.
  const std::vector<int32_t> fake = tok.Encode("<|eot_idx|>");
  EXPECT_GT(fake.size(), 1u);
  EXPECT_THAT(fake, Each(Ge(BuiltinTokenizer::kNumSpecialTokens)));
  EXPECT_THAT(tok.Encode("<|eot_id"), Each(Ge(BuiltinTokenizer::kNumSpecialTokens)));
}

TEST(BuiltinTokenizerTest, ShortWordWithLeadingSpaceIsOneToken) {
  BuiltinTokenizer tok;
  EXPECT_EQ(tok.Encode(" mesa").size(), 1u);
  EXPECT_EQ(tok.Encode(" a").size(), 1u);
  EXPECT_EQ(tok.Encode(" hello").size(), 1u);   // 6 characters: still one piece
  EXPECT_EQ(tok.Encode(" wonder").size(), 1u);  // 7 characters: the longest single piece
  EXPECT_NE(tok.Encode(" mesa"), tok.Encode("mesa"));
  EXPECT_NE(tok.Encode(" mesa"), tok.Encode(" Mesa"));
}

TEST(BuiltinTokenizerTest, LongPiecesAreCutIntoChunks) {
  BuiltinTokenizer tok;
  // " wonderfully" is 12 characters: " wond" "erful" "ly".
  const std::vector<int32_t> ids = tok.Encode(" wonderfully");
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[0], tok.Encode(" wond")[0]);
  EXPECT_EQ(ids[1], tok.Encode("erful")[0]);
  EXPECT_EQ(ids[2], tok.Encode("ly")[0]);
  EXPECT_EQ(tok.Encode("abcdefgh").size(), 2u);  // 8 letters: 5 + 3
  EXPECT_EQ(tok.Encode(std::string(40, ' ')).size(), 8u);
}

TEST(BuiltinTokenizerTest, DigitsComeInRunsOfAtMostThree) {
  BuiltinTokenizer tok;
  EXPECT_EQ(tok.Encode("7").size(), 1u);
  EXPECT_EQ(tok.Encode("123").size(), 1u);
  EXPECT_EQ(tok.Encode("1234567"),
            Concat(Concat(tok.Encode("123"), tok.Encode("456")), tok.Encode("7")));
  // Digits never take the leading space.
  EXPECT_EQ(tok.Encode(" 42"), Concat(tok.Encode(" "), tok.Encode("42")));
}

TEST(BuiltinTokenizerTest, PunctuationTakesOneLeadingSpace) {
  BuiltinTokenizer tok;
  EXPECT_EQ(tok.Encode(" (").size(), 1u);
  EXPECT_EQ(tok.Encode("a, b").size(), 3u);  // "a" "," " b"
  EXPECT_EQ(tok.Encode("x :=").size(), 2u);  // "x" " :="
}

TEST(BuiltinTokenizerTest, LastSpaceOfARunJoinsTheNextWord) {
  BuiltinTokenizer tok;
  EXPECT_EQ(tok.Encode("a   b"),
            Concat(Concat(tok.Encode("a"), tok.Encode("  ")), tok.Encode(" b")));
  // Trailing spaces stay a run of their own.
  EXPECT_EQ(tok.Encode("a  ").size(), 2u);
}

TEST(BuiltinTokenizerTest, NewlinesAreSeparateFromSpaces) {
  BuiltinTokenizer tok;
  EXPECT_EQ(tok.Encode("\n\n mesa"), Concat(tok.Encode("\n\n"), tok.Encode(" mesa")));
  EXPECT_EQ(
      tok.Encode("a\n  b"),
      Concat(Concat(Concat(tok.Encode("a"), tok.Encode("\n")), tok.Encode(" ")), tok.Encode(" b")));
}

TEST(BuiltinTokenizerTest, ContractionsAreTheirOwnPieces) {
  BuiltinTokenizer tok;
  EXPECT_EQ(tok.Encode("don't"), Concat(tok.Encode("don"), tok.Encode("'t")));
  EXPECT_EQ(tok.Encode("we've"), Concat(tok.Encode("we"), tok.Encode("'ve")));
  EXPECT_EQ(tok.Encode("'ve").size(), 1u);
  EXPECT_EQ(tok.Encode("'x").size(), 2u);  // "'" "x"
}

TEST(BuiltinTokenizerTest, NonAsciiBytesAreLetters) {
  BuiltinTokenizer tok;
  EXPECT_EQ(tok.Encode(" caf\xc3\xa9").size(), 1u);  // " café": 6 bytes
  EXPECT_EQ(tok.Encode("na\xc3\xafve").size(), 1u);  // "naïve": 6 bytes
}

TEST(BuiltinTokenizerTest, AppendedWordsTokenizeLikeTheWordsOneByOne) {
  BuiltinTokenizer tok;
  const std::vector<std::string> words = {" mesa", " flor", " ten", " b", " quo", " atlas"};
  std::string answer;
  std::vector<int32_t> one_by_one;
  for (const std::string& word : words) {
    answer += word;
    const std::vector<int32_t> ids = tok.Encode(word);
    ASSERT_EQ(ids.size(), 1u) << word;
    one_by_one.push_back(ids[0]);
  }
  EXPECT_EQ(tok.Encode(answer), one_by_one);
  const std::string prompt = "<|start_header_id|>assistant<|end_header_id|>\n\n";
  EXPECT_EQ(tok.Encode(prompt + answer + "<|eot_id|>"),
            Concat(Concat(tok.Encode(prompt), one_by_one), {BuiltinTokenizer::kEndOfTurnId}));
}

TEST(BuiltinTokenizerTest, EncodingSplitsAtWordBoundaries) {
  BuiltinTokenizer tok;
  const std::vector<std::pair<std::string, std::string>> cases = {{"Hello", " world"},
                                                                  {"Hello,", " world"},
                                                                  {"end.", " Next"},
                                                                  {"a\n\n", " b"},
                                                                  {"x?!", " y"},
                                                                  {"<|eot_id|>", " z"},
                                                                  {"extraordinarily", " long"},
                                                                  {"(", " caf\xc3\xa9"}};
  for (const auto& [a, b] : cases) {
    EXPECT_EQ(tok.Encode(a + b), Concat(tok.Encode(a), tok.Encode(b))) << a << "|" << b;
  }
  // The paragraph cut at every word boundary.
  const std::string text = kParagraph;
  for (size_t pos = 1; pos < text.size(); ++pos) {
    const unsigned char prev = text[pos - 1];
    const bool boundary = text[pos] == ' ' && pos + 1 < text.size() &&
                          std::isalpha(text[pos + 1]) && prev != ' ' && !std::isdigit(prev) &&
                          prev != '\'';
    if (!boundary) continue;
    const std::string a = text.substr(0, pos);
    const std::string b = text.substr(pos);
    EXPECT_EQ(tok.Encode(text), Concat(tok.Encode(a), tok.Encode(b))) << pos;
  }
}

// Random texts built from fragments that exercise every scanner branch.
std::string RandomText(Rng& rng, int fragments) {
  static const std::vector<std::string> kFragments = {"a",
                                                      "Zq",
                                                      "word",
                                                      " ",
                                                      "  ",
                                                      "\t",
                                                      "\n",
                                                      "\r\n",
                                                      "1",
                                                      "2024",
                                                      ".",
                                                      ",",
                                                      "'",
                                                      "'s",
                                                      "'ll",
                                                      "<",
                                                      "|",
                                                      "<|",
                                                      ">",
                                                      "<|eot_id|>",
                                                      "\xc3\xa9",
                                                      "\xe4",
                                                      "\x80",
                                                      "!?",
                                                      "--",
                                                      "\0",
                                                      "\x7f",
                                                      " x",
                                                      "<|begin_of_text|>"};
  std::string text;
  for (int i = 0; i < fragments; ++i) text += kFragments[rng.UniformInt(kFragments.size())];
  return text;
}

TEST(BuiltinTokenizerTest, RandomTextsGiveValidIdsAndSplitAtWordStarts) {
  BuiltinTokenizer tok;
  Rng rng(7);
  for (int round = 0; round < 2000; ++round) {
    const std::string a = RandomText(rng, static_cast<int>(rng.UniformInt(12)));
    const std::vector<int32_t> ids = tok.Encode(a);
    EXPECT_EQ(ids, tok.Encode(a));
    for (int32_t id : ids) {
      ASSERT_GE(id, 1);
      ASSERT_LT(id, BuiltinTokenizer::kVocabSize);
    }
    // Whatever `a` ends with, once it ends in a letter a following " word" splits cleanly.
    const std::string left = a + "x";
    const std::string right = " w" + RandomText(rng, 3);
    EXPECT_EQ(tok.Encode(left + right), Concat(tok.Encode(left), tok.Encode(right)))
        << "[" << left << "|" << right << "]";
  }
}

}  // namespace
}  // namespace warmroute::request
