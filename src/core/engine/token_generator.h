// Deterministic generated text for the emulated engine. Output token i of a request with seed s
// is a pseudo-word drawn from a fixed list of short words (at most 4 letters) by hash of (s, i),
// with a leading space. Every such piece is one token of the tokenizer, so when a client sends an
// answer back as conversation history, the prompt re-tokenizes to exactly the tokens the engine
// generated and the cached generated blocks hit — as with a real model.
//
// A request may ask for a bare start: its token 0 is then a word without the leading space
// ("mesa", from a second list of words that are one token without it). A chat answer starts so
// (as a real model's answer after "assistant\n" does), which keeps the match when a chat
// template trims the content it renders (Llama 3's and Gemma 3's `content | trim`).
//
// With a real vocabulary (a tokenizer.json) fewer words may qualify than kMaxWords: each list
// keeps those that do, and Create refuses a tokenizer under which a list is empty.
//
// Usage:
//   BuiltinTokenizer tok;
//   TokenGenerator gen(tok);
//   int32_t id = gen.Token(seed, 0);
//   std::string_view text = gen.Text(seed, 0);                        // e.g. " mesa"
//   std::string_view first = gen.Text(seed, 0, /*bare_start=*/true);  // e.g. "mesa"
//
// Thread-safety: immutable after construction; all methods are const and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/request/tokenizer.h"

namespace warmroute::engine {

class TokenGenerator {
 public:
  static constexpr size_t kMaxWords = 1024;  // per list

  // The words of `tokenizer`. FailedPrecondition when no candidate word (with or without the
  // leading space) is a single token of it.
  static absl::StatusOr<std::unique_ptr<TokenGenerator>> Create(
      const request::Tokenizer& tokenizer);
  // The same for a tokenizer under which both lists are known to be non-empty (the built-in
  // one); aborts otherwise.
  explicit TokenGenerator(const request::Tokenizer& tokenizer);
  TokenGenerator(const TokenGenerator&) = delete;
  TokenGenerator& operator=(const TokenGenerator&) = delete;

  // Output token `index` of the request with `seed`; with `bare_start`, token 0 is a bare word.
  int32_t Token(uint64_t seed, int64_t index, bool bare_start = false) const;
  std::string_view Text(uint64_t seed, int64_t index, bool bare_start = false) const;

  // The words it draws from: word i is the token word_id(i) and the text word_text(i) (" mesa").
  size_t num_words() const { return spaced_.ids.size(); }
  int32_t word_id(size_t i) const { return spaced_.ids[i]; }
  std::string_view word_text(size_t i) const { return spaced_.texts[i]; }
  // The bare words a bare start draws from ("mesa").
  size_t num_bare_words() const { return bare_.ids.size(); }
  int32_t bare_word_id(size_t i) const { return bare_.ids[i]; }
  std::string_view bare_word_text(size_t i) const { return bare_.texts[i]; }

 private:
  struct Words {
    std::vector<std::string> texts;
    std::vector<int32_t> ids;
  };
  TokenGenerator(Words spaced, Words bare) : spaced_(std::move(spaced)), bare_(std::move(bare)) {}

  const Words& ListFor(int64_t index, bool bare_start) const {
    return bare_start && index == 0 ? bare_ : spaced_;
  }
  // The candidate words that are one token of `tokenizer` after the prefix `space` (" " or ""),
  // each token taken once, at most kMaxWords.
  static Words SingleTokenWords(const request::Tokenizer& tokenizer, std::string_view space);
  static size_t WordIndex(const Words& words, uint64_t seed, int64_t index);

  Words spaced_;
  Words bare_;
};

}  // namespace warmroute::engine
