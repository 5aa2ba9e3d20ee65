// The word list: pronounceable pseudo-words of consonant-vowel syllables — CV ("ba"), CVC
// ("bak") and CVCV ("mesa") over 14 consonants and 5 vowels — taken round-robin across the three
// shapes, so the text reads as a mix of short words. A word is kept only if " word" encodes to
// exactly one token that no earlier word has, so text and token ids correspond one to one.
// kNumWords = 1024 words give 10 bits of entropy per token: generated answers do not repeat
// blocks by accident, so cache hits on generated text come only from real reuse.

#include "core/engine/token_generator.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "absl/container/flat_hash_set.h"
#include "common/rng.h"

namespace warmroute::engine {
namespace {

constexpr size_t kNumWords = 1024;
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

TokenGenerator::TokenGenerator(const request::Tokenizer& tokenizer) {
  const std::array<std::vector<std::string>, 3> shapes = {WordsOfShape("CV"), WordsOfShape("CVC"),
                                                          WordsOfShape("CVCV")};
  absl::flat_hash_set<int32_t> seen_ids;
  texts_.reserve(kNumWords);
  ids_.reserve(kNumWords);
  for (size_t i = 0; texts_.size() < kNumWords; ++i) {
    bool any = false;
    for (const std::vector<std::string>& words : shapes) {
      if (i >= words.size() || texts_.size() == kNumWords) continue;
      any = true;
      std::string text = " " + words[i];
      const std::vector<int32_t> ids = tokenizer.Encode(text);
      if (ids.size() != 1 || !seen_ids.insert(ids[0]).second) continue;
      texts_.push_back(std::move(text));
      ids_.push_back(ids[0]);
    }
    if (!any) break;
  }
  // A tokenizer that splits short words would make generated text re-tokenize differently.
  if (texts_.size() < 512) {
    std::fprintf(stderr, "TokenGenerator: only %zu single-token words under this tokenizer\n",
                 texts_.size());
    std::abort();
  }
}

size_t TokenGenerator::WordIndex(uint64_t seed, int64_t index) const {
  return static_cast<size_t>(Mix64(seed ^ Mix64(static_cast<uint64_t>(index))) % texts_.size());
}

int32_t TokenGenerator::Token(uint64_t seed, int64_t index) const {
  return ids_[WordIndex(seed, index)];
}

std::string_view TokenGenerator::Text(uint64_t seed, int64_t index) const {
  return texts_[WordIndex(seed, index)];
}

}  // namespace warmroute::engine
