// Tokenizers turn prompt text into token ids. The interface lets a real Hugging Face
// tokenizer.json tokenizer replace the built-in one.
//
// BuiltinTokenizer needs no model files. It pre-tokenizes like GPT-style BPE — a word with one
// optional leading space, an English contraction ('s, 't, 're, ...), a digit run (up to 3
// digits), a punctuation run with one optional leading space, a run of spaces/tabs (whose last
// space joins a following word), a run of newlines, and the Llama-3 special tokens
// (<|begin_of_text|>, <|start_header_id|>, <|end_header_id|>, <|eot_id|>) as single tokens with
// the fixed ids k*Id below — then cuts any piece longer than kMaxPieceChars into chunks of
// kChunkChars, and maps each piece to an id in [kNumSpecialTokens, kVocabSize) by XXH3 hash.
// Bytes >= 0x80 (non-ASCII UTF-8) count as letters. Lengths are in bytes.
// On English text this gives about 4 characters per token, close to Llama 3's tokenizer.
// Deterministic: the same text always gives the same ids, and a text that is the concatenation
// of pieces cut at piece boundaries tokenizes to the concatenation of their ids. In particular
// Encode(a + b) == Encode(a) + Encode(b) when `a` ends with a letter, punctuation or newline and
// `b` starts with a space and a letter: " mesa" (a space and up to 6 letters) is one token, so a
// generated answer " w1 w2 w3" re-tokenizes to the ids of its words.
//
// Usage:
//   BuiltinTokenizer tok;
//   std::vector<int32_t> ids = tok.Encode("Hello, world");
//   std::vector<std::string_view> pieces;
//   tok.Encode("Hello, world", &pieces);   // "Hello", ",", " world"
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
  // The same, and in `pieces` (replaced) the text each id stands for: views into `text` whose
  // concatenation is `text`.
  virtual std::vector<int32_t> Encode(std::string_view text,
                                      std::vector<std::string_view>* pieces) const = 0;
  virtual int32_t VocabSize() const = 0;
};

class BuiltinTokenizer final : public Tokenizer {
 public:
  static constexpr int32_t kVocabSize = 128256;  // Llama 3's vocabulary size
  static constexpr int32_t kNumSpecialTokens = 256;
  static constexpr int kMaxPieceChars = 7;  // with kChunkChars = 5: ~4.0 chars/token on English
  static constexpr int kChunkChars = 5;
  // Ids of the Llama-3 special tokens (all < kNumSpecialTokens; ordinary pieces never get them).
  static constexpr int32_t kBeginOfTextId = 1;
  static constexpr int32_t kStartHeaderId = 2;
  static constexpr int32_t kEndHeaderId = 3;
  static constexpr int32_t kEndOfTurnId = 4;

  std::vector<int32_t> Encode(std::string_view text) const override;
  std::vector<int32_t> Encode(std::string_view text,
                              std::vector<std::string_view>* pieces) const override;
  int32_t VocabSize() const override { return kVocabSize; }
};

}  // namespace warmroute::request
