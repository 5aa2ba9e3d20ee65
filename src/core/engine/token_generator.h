// Deterministic generated text for the emulated engine. Output token i of a request with seed s
// is a pseudo-word drawn from a fixed list of short words (at most 4 letters) by hash of (s, i),
// with a leading space. Every such piece is one token of the BuiltinTokenizer, so when a client
// sends an answer back as conversation history, the prompt re-tokenizes to exactly the tokens
// the engine generated and the cached generated blocks hit — as with a real model.
//
// Usage:
//   BuiltinTokenizer tok;
//   TokenGenerator gen(tok);
//   int32_t id = gen.Token(seed, 0);
//   std::string_view text = gen.Text(seed, 0);   // e.g. " mesa"
//
// Thread-safety: immutable after construction; all methods are const and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/request/tokenizer.h"

namespace warmroute::engine {

class TokenGenerator {
 public:
  explicit TokenGenerator(const request::Tokenizer& tokenizer);
  TokenGenerator(const TokenGenerator&) = delete;
  TokenGenerator& operator=(const TokenGenerator&) = delete;

  int32_t Token(uint64_t seed, int64_t index) const;
  std::string_view Text(uint64_t seed, int64_t index) const;

  // The words it draws from: word i is the token word_id(i) and the text word_text(i).
  size_t num_words() const { return ids_.size(); }
  int32_t word_id(size_t i) const { return ids_[i]; }
  std::string_view word_text(size_t i) const { return texts_[i]; }

 private:
  size_t WordIndex(uint64_t seed, int64_t index) const;
  std::vector<std::string> texts_;
  std::vector<int32_t> ids_;
};

}  // namespace warmroute::engine
