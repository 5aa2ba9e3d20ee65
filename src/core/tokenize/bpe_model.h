// The BPE model of a tokenizer.json ("model": {"type": "BPE", ...}): a vocabulary, ranked
// merges (in either file encoding: "a b" strings or ["a", "b"] pairs), `ignore_merges`,
// `byte_fallback` (<0xNN> tokens), `unk_token` with `fuse_unk`, and
// `continuing_subword_prefix`/`end_of_word_suffix`, encoding one pre-token at a time exactly as
// the Rust `tokenizers` library does (the lowest-ranked adjacent pair merges first, the
// leftmost among equals).
//
// Byte-level models (a ByteLevel pre-tokenizer) take the pre-token's raw bytes: each byte stands
// for its character of GPT-2's byte alphabet, and the vocabulary is kept keyed by the bytes its
// tokens stand for, so no text is ever mapped to that alphabet.
//
// Usage:
//   absl::StatusOr<BpeModel> bpe = BpeModel::FromJson(json["model"], /*byte_level=*/true);
//   std::vector<int32_t> ids;
//   bpe->Encode("hello", &ids, nullptr);
//
// Thread-safety: const methods are thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "core/tokenize/string_map.h"
#include "simdjson.h"

namespace warmroute::tokenize {

class BpeModel {
 public:
  // InvalidArgument naming what is wrong or unsupported in `json`.
  static absl::StatusOr<BpeModel> FromJson(simdjson::dom::element json, bool byte_level);

  // Appends the ids of `piece` (one pre-token) to `ids` and, when `lengths` is not null, the
  // number of bytes of `piece` each id covers (a byte-fallback token counts one byte, which can
  // overcount the piece only when a byte-level model lacks a byte of its alphabet).
  void Encode(std::string_view piece, std::vector<int32_t>* ids,
              std::vector<uint32_t>* lengths) const;

  // Cuts `piece` into parts whose ids, each encoded alone, are the ids of `piece`: before each
  // U+2581 (SentencePiece's space) that follows a character x with which no vocabulary entry
  // contains "x\u2581" — no merge can then join across, so the parts merge independently. One
  // part (`piece` itself) for byte-level models, with a subword prefix or suffix, or when
  // ignore_merges finds `piece` whole in the vocabulary.
  void SplitWord(std::string_view piece, std::vector<std::string_view>* parts) const;
  // False when SplitWord never cuts (then it gives `piece` itself, and need not be called).
  bool may_split_words() const { return split_words_; }

  // The id of the vocabulary entry `token` (as written in the file), if any.
  std::optional<int32_t> TokenId(std::string_view token) const;
  // The vocabulary entry of `id` as written in the file, or null.
  const std::string* TokenText(int32_t id) const;
  // One more than the largest id.
  int32_t size() const { return static_cast<int32_t>(id_to_token_.size()); }
  bool byte_level() const { return byte_level_; }
  size_t MemoryBytes() const;

 private:
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    uint32_t len;
  };

  // The initial symbols of `piece` (one per character or byte, or fallbacks).
  void InitialSymbols(std::string_view piece, std::vector<Symbol>* symbols) const;
  // The id of one character (or byte) of a piece, `first`/`last` in it; -1 when unknown.
  int32_t CharId(std::string_view ch, bool first, bool last) const;
  void MergeAll(std::vector<Symbol>* symbols) const;

  bool byte_level_ = false;
  bool ignore_merges_ = false;
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  int32_t unk_id_ = -1;
  std::string prefix_;  // continuing_subword_prefix
  std::string suffix_;  // end_of_word_suffix
  // Keyed by the model's input: the bytes a token stands for (byte-level) or its text.
  StringMap<int32_t> vocab_;
  std::vector<std::string> id_to_token_;  // as written in the file ("" for a gap in the ids)
  // (left << 32 | right) -> (rank << 32 | merged id)
  absl::flat_hash_map<uint64_t, uint64_t> merges_;
  std::array<int32_t, 256> byte_id_{};      // byte-level: each byte's alphabet token, or -1
  std::array<int32_t, 256> fallback_id_{};  // <0xNN>, or -1
  std::array<std::string, 256> byte_char_;  // byte-level: each byte's alphabet character
  // SplitWord: whether it may cut at all, and the characters x of the entries containing
  // "x\u2581".
  bool split_words_ = false;
  absl::flat_hash_set<char32_t> joins_space_;
};

// GPT-2's byte alphabet: the character that stands for byte `b` (as UTF-8), and back.
const std::string& ByteLevelChar(uint8_t b);
// The byte that `ch` (one character, UTF-8) stands for, if it is in the alphabet.
std::optional<uint8_t> ByteLevelByte(std::string_view ch);

}  // namespace warmroute::tokenize
