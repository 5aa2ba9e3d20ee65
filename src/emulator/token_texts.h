// What each token id of the built-in tokenizer stands for, as far as the emulator process knows:
// the tokenizer maps text pieces to ids by hash and cannot be inverted, so /detokenize answers
// from what the process has seen — the Llama-3 special tokens, the words the engines generate,
// and every piece any replica's /tokenize has returned. One is shared by all the replicas of a
// process, as a real fleet's replicas share one tokenizer: ids a client got from one replica
// (through a gateway, say) read back on another. An id it has not seen reads as "<|token_N|>". Two pieces
// that hash to one id read as the first one seen. At most one entry per id of the vocabulary.
//
// Usage:
//   TokenTexts texts(generator);
//   texts.Learn(ids, pieces);                 // after tokenizer.Encode(text, &pieces)
//   std::string text = texts.Detokenize(ids);
//
// Thread-safety: thread-safe (one mutex; the replicas' threads share it).
#pragma once

#include <cstdint>
#include <mutex>
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

  size_t size() const;

 private:
  mutable std::mutex mu_;
  absl::flat_hash_map<int32_t, std::string> texts_;  // guarded by mu_
};

}  // namespace warmroute::emulator
