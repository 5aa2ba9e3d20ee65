// What each token id of the built-in tokenizer stands for, as far as one replica knows: the
// tokenizer maps text pieces to ids by hash and cannot be inverted, so /detokenize answers from
// what the replica has seen — the Llama-3 special tokens, the words the engine generates, and
// every piece /tokenize has returned. An id it has not seen reads as "<|token_N|>". Two pieces
// that hash to one id read as the first one seen. At most one entry per id of the vocabulary.
//
// Usage:
//   TokenTexts texts(generator);
//   texts.Learn(ids, pieces);                 // after tokenizer.Encode(text, &pieces)
//   std::string text = texts.Detokenize(ids);
//
// Thread-safety: none; used on the replica's thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "core/engine/token_generator.h"

namespace warmroute::emulator {

class TokenTexts {
 public:
  explicit TokenTexts(const engine::TokenGenerator& generator);
  TokenTexts(const TokenTexts&) = delete;
  TokenTexts& operator=(const TokenTexts&) = delete;

  // Records that ids[i] stands for pieces[i]. REQUIRES: ids.size() == pieces.size().
  void Learn(std::span<const int32_t> ids, std::span<const std::string_view> pieces);

  // The text of `id`: what it stands for, or "<|token_<id>|>".
  std::string Text(int32_t id) const;

  // The concatenated text of `ids`.
  std::string Detokenize(std::span<const int32_t> ids) const;

  size_t size() const { return texts_.size(); }

 private:
  absl::flat_hash_map<int32_t, std::string> texts_;
};

}  // namespace warmroute::emulator
