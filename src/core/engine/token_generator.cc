// The word lists: pronounceable pseudo-words of consonant-vowel syllables — CV ("ba"), CVC
// ("bak") and CVCV ("mesa") over 14 consonants and 5 vowels — taken round-robin across the three
// shapes, so the text reads as a mix of short words. A word is kept only if " word" (the spaced
// list) or "word" (the bare list) encodes to exactly one token that no earlier word of the list
// has, so text and token ids correspond one to one. kMaxWords = 1024 words give 10 bits of
// entropy per token: generated answers do not repeat blocks by accident, so cache hits on
// generated text come only from real reuse. The built-in tokenizer keeps 1024 in each list; real
// vocabularies keep what they have (docs/engine.md lists the counts of the files tested).

#include "core/engine/token_generator.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/rng.h"

namespace warmroute::engine {
namespace {

constexpr std::string_view kConsonants = "bdfgklmnprstvz";
constexpr std::string_view kVowels = "aeiou";

// Every word of the given consonant/vowel pattern ('C' or 'V' per letter), in lexical order.
std::vector<std::string> WordsOfShape(std::string_view shape) {
  std::vector<std::string> words = {""};
  for (char slot : shape) {
    const std::string_view letters = slot == 'C' ? kConsonants : kVowels;
    std::vector<std::string> longer;
    longer.reserve(words.size() * letters.size());
    for (const std::string& w : words) {
      for (char c : letters) longer.push_back(w + c);
    }
    words = std::move(longer);
  }
  return words;
}

}  // namespace

TokenGenerator::Words TokenGenerator::SingleTokenWords(const request::Tokenizer& tokenizer,
                                                       std::string_view space) {
  const std::array<std::vector<std::string>, 3> shapes = {WordsOfShape("CV"), WordsOfShape("CVC"),
                                                          WordsOfShape("CVCV")};
  absl::flat_hash_set<int32_t> seen_ids;
  TokenGenerator::Words words;
  words.texts.reserve(kMaxWords);
  words.ids.reserve(kMaxWords);
  for (size_t i = 0; words.texts.size() < kMaxWords; ++i) {
    bool any = false;
    for (const std::vector<std::string>& shape : shapes) {
      if (i >= shape.size() || words.texts.size() == kMaxWords) continue;
      any = true;
      std::string text = std::string(space) + shape[i];
      const std::vector<int32_t> ids = tokenizer.Encode(text);
      if (ids.size() != 1 || !seen_ids.insert(ids[0]).second) continue;
      words.texts.push_back(std::move(text));
      words.ids.push_back(ids[0]);
    }
    if (!any) break;
  }
  return words;
}

absl::StatusOr<std::unique_ptr<TokenGenerator>> TokenGenerator::Create(
    const request::Tokenizer& tokenizer) {
  Words spaced = SingleTokenWords(tokenizer, " ");
  Words bare = SingleTokenWords(tokenizer, "");
  // Without single-token words, generated text could not re-tokenize to the generated ids.
  if (spaced.ids.empty() || bare.ids.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no short word is a single token of this vocabulary (", spaced.ids.size(),
        " words with a leading space, ", bare.ids.size(),
        " without): the engine cannot generate text that re-tokenizes to its tokens"));
  }
  return std::unique_ptr<TokenGenerator>(new TokenGenerator(std::move(spaced), std::move(bare)));
}

TokenGenerator::TokenGenerator(const request::Tokenizer& tokenizer) {
  absl::StatusOr<std::unique_ptr<TokenGenerator>> made = Create(tokenizer);
  if (!made.ok()) {
    std::fprintf(stderr, "TokenGenerator: %s\n", std::string(made.status().message()).c_str());
    std::abort();
  }
  spaced_ = std::move((*made)->spaced_);
  bare_ = std::move((*made)->bare_);
}

size_t TokenGenerator::WordIndex(const Words& words, uint64_t seed, int64_t index) {
  return static_cast<size_t>(Mix64(seed ^ Mix64(static_cast<uint64_t>(index))) %
                             words.ids.size());
}

int32_t TokenGenerator::Token(uint64_t seed, int64_t index, bool bare_start) const {
  const Words& words = ListFor(index, bare_start);
  return words.ids[WordIndex(words, seed, index)];
}

std::string_view TokenGenerator::Text(uint64_t seed, int64_t index, bool bare_start) const {
  const Words& words = ListFor(index, bare_start);
  return words.texts[WordIndex(words, seed, index)];
}

}  // namespace warmroute::engine
