// Tokenizers turn prompt text into token ids. The interface lets a real Hugging Face
// tokenizer.json tokenizer (a later issue) replace the built-in one.
//
// BuiltinTokenizer needs no model files. It pre-tokenizes like GPT-style BPE — a word with its
// leading space, a digit run (up to 3 digits), a punctuation run, a whitespace run, and the
// Llama-3 special tokens (<|begin_of_text|>, <|start_header_id|>, <|end_header_id|>,
// <|eot_id|>) as single tokens — then cuts any piece longer than kMaxPieceChars into chunks of
// kChunkChars, and maps each piece to an id in [kNumSpecialTokens, kVocabSize) by XXH3 hash.
// On English text this gives about 4 characters per token, close to Llama 3's tokenizer.
// Deterministic: the same text always gives the same ids, and a text that is the concatenation
// of pieces cut at piece boundaries tokenizes to the concatenation of their ids.
//
// Usage:
//   BuiltinTokenizer tok;
//   std::vector<int32_t> ids = tok.Encode("Hello, world");
//
// Thread-safety: Encode is const and thread-safe.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace warmroute::request {

class Tokenizer {
 public:
  Tokenizer() = default;
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;
  virtual ~Tokenizer() = default;

  // Token ids of `text`, in [0, VocabSize()).
  virtual std::vector<int32_t> Encode(std::string_view text) const = 0;
  virtual int32_t VocabSize() const = 0;
};

class BuiltinTokenizer final : public Tokenizer {
 public:
  static constexpr int32_t kVocabSize = 128256;  // Llama 3's vocabulary size
  static constexpr int32_t kNumSpecialTokens = 256;
  static constexpr int kMaxPieceChars = 6;
  static constexpr int kChunkChars = 4;

  std::vector<int32_t> Encode(std::string_view text) const override;
  int32_t VocabSize() const override { return kVocabSize; }
};

}  // namespace warmroute::request
