// HfTokenizer: a Hugging Face tokenizer.json, loaded and run in process, giving the token ids
// the Rust `tokenizers` library gives (and so the ids vLLM computes for a prompt). It implements
// request::Tokenizer.
//
// Pipeline, as in the Rust library: added tokens with `normalized: false` are cut out of the
// text first (added_vocabulary.h); each piece between them is normalized (normalizer.h), then
// cut at added tokens with `normalized: true`; each remaining piece is split into pre-tokens
// (pre_tokenizer.h), and each pre-token encoded by the BPE model (bpe_model.h). Special tokens
// (post_processor.h) are added only by EncodeWithSpecialTokens. Whatever a file holds that is
// not supported is refused at load with InvalidArgument naming it ("tokenizer.json:
// pre_tokenizer type 'UnicodeScripts' is not supported"); nothing is approximated.
//
// Speed. Each thread keeps a bounded cache of pre-token -> ids (piece_cache.h). And encodes
// restart from remembered prefixes (prefix_cache.h): a prompt that begins with a system prompt
// seen before costs only its new part.
//
// Why a restart gives exactly the ids of a full encode. A text is encoded in parts cut at
// checkpoints of two kinds, and the ids of the whole are the ids of the parts, one after the
// other:
//  - right after an added token of the first kind: the Rust library itself encodes each piece
//    between those tokens apart (normalizer, pre-tokenizer and model see one piece at a time);
//  - inside a piece, after a "\n" followed by a printable ASCII character, when (a) the normalizer
//    gives the same text normalized in two parts (Normalizer::CutsAfterNewline), (b) the
//    pre-tokenizer splits there whatever follows (PreTokenizer::CutAfterNewline is kHard: for
//    the regexes of real files, split_matcher.h says why), (c) no added token strips the spaces
//    before it (lstrip) and no normalized added token contains "\n".
// Which pre-tokens and added tokens a full encode makes before a cut depends only on the bytes
// before it and a few after: the character after it, and as many as an added token that begins
// before the cut could reach past it (AddedVocabulary::ReachPast); a restart from a remembered
// text's checkpoint is taken only when the new text has those same bytes (compared, not just
// hashed). The parts after the cut are encoded as a full encode would:
// a restart inside a piece normalizes its rest as a continuation (no Prepend), and no Metaspace
// "first" or ByteLevel prefix space applies there (a cut is refused when one would).
//
// Pieces (Encode with `pieces`): each id's view starts where its pre-token's text starts in the
// original text and runs to the next id's; where normalization or Metaspace changed the text,
// the first id of that text gets all of it and the others empty views.
//
// Usage:
//   absl::StatusOr<std::unique_ptr<HfTokenizer>> tok = HfTokenizer::FromFile("tokenizer.json");
//   std::vector<int32_t> ids = (*tok)->Encode("<|im_start|>user\nHi<|im_end|>");
//   std::string text = (*tok)->Decode(ids, /*skip_special_tokens=*/false);
//
// Thread-safety: every const method may run on many threads at once.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/per_thread.h"
#include "core/request/tokenizer.h"
#include "core/tokenize/added_vocabulary.h"
#include "core/tokenize/bpe_model.h"
#include "core/tokenize/decoder.h"
#include "core/tokenize/normalizer.h"
#include "core/tokenize/piece_cache.h"
#include "core/tokenize/post_processor.h"
#include "core/tokenize/pre_tokenizer.h"
#include "core/tokenize/prefix_cache.h"

namespace warmroute::tokenize {

class HfTokenizer final : public request::Tokenizer {
 public:
  struct Options {
    size_t piece_cache_entries = 1 << 16;  // per thread; 0 disables
    size_t prefix_cache_bytes = 64 << 20;  // 0 disables
    size_t prefix_min_bytes = 1024;        // shorter texts are not remembered
  };

  // Loads a tokenizer.json file. NotFound when it cannot be read, InvalidArgument when it is not
  // a tokenizer.json this class supports (the message names the part).
  static absl::StatusOr<std::unique_ptr<HfTokenizer>> FromFile(const std::string& path,
                                                               Options options);
  static absl::StatusOr<std::unique_ptr<HfTokenizer>> FromFile(const std::string& path) {
    return FromFile(path, Options());
  }
  // The same from the file's contents.
  static absl::StatusOr<std::unique_ptr<HfTokenizer>> FromJson(std::string_view json,
                                                               Options options);

  // The ids of `text` without special tokens (add_special_tokens=False). Ill-formed UTF-8 is
  // encoded as if each ill-formed sequence were U+FFFD.
  std::vector<int32_t> Encode(std::string_view text) const override;
  std::vector<int32_t> Encode(std::string_view text,
                              std::vector<std::string_view>* pieces) const override;
  // The ids an encode took from the prefix cache: the first `ids` of `*remembered`, a remembered
  // text's ids (never modified); `ids` is 0 when it took none.
  struct Reuse {
    std::shared_ptr<const std::vector<int32_t>> remembered;
    size_t ids = 0;
  };
  // Encode(text) in two parts: the ids it took from the prefix cache, said in `*reuse`, and the
  // ids after them, returned; Encode(text) is their concatenation. A caller that only counts or
  // hashes the ids then copies no remembered one, and can reuse what it derived from them before
  // (gateway/keys/block_hash_memo.h). REQUIRES: reuse != nullptr.
  std::vector<int32_t> EncodeAfterReuse(std::string_view text, Reuse* reuse) const;
  // The ids with the post-processor's special tokens (add_special_tokens=True).
  std::vector<int32_t> EncodeWithSpecialTokens(std::string_view text) const;

  // The text of `ids`; ids unknown to the file are skipped.
  std::string Decode(std::span<const int32_t> ids, bool skip_special_tokens) const;

  int32_t VocabSize() const override { return vocab_size_; }
  // The id of a token as the file spells it (an added token's content or a vocab entry).
  std::optional<int32_t> TokenId(std::string_view token) const;
  // The token of an id as the file spells it ("Ġworld", "<|im_end|>"): transformers'
  // convert_ids_to_tokens. Nullopt for an id the file does not have.
  std::optional<std::string> TokenString(int32_t id) const;
  const AddedVocabulary& added_tokens() const { return added_; }

  // Bytes held by the loaded tokenizer (vocabulary, merges, added tokens, tables), not counting
  // its caches.
  size_t MemoryBytes() const;
  // Bytes held by the caches now (every thread's piece cache and the prefix cache).
  size_t CacheBytes() const;
  // How many encodes restarted from a remembered prefix.
  uint64_t prefix_hits() const { return prefix_cache_ != nullptr ? prefix_cache_->hits() : 0; }

 private:
  struct Sink;

  HfTokenizer() = default;

  // Encodes text[start, end) into `sink`; `continuation`: text[start] continues a piece.
  void EncodeRange(std::string_view text, size_t start, bool continuation, Sink& sink) const;
  // Encodes one piece between added tokens of the first kind, in parts cut at checkpoints.
  void EncodePiece(std::string_view text, size_t begin, size_t end, bool continuation,
                   Sink& sink) const;
  // Encodes one part of a piece: normalize, cut out normalized added tokens, pre-tokenize, BPE.
  void EncodePart(std::string_view text, size_t begin, size_t end, bool at_piece_start,
                  Sink& sink) const;
  // `reuse` not null: EncodeAfterReuse's split (the reused ids left out of the result).
  std::vector<int32_t> EncodeImpl(std::string_view text, std::vector<std::string_view>* pieces,
                                  Reuse* reuse = nullptr) const;

  Options options_;
  Normalizer normalizer_;
  PreTokenizer pre_tokenizer_;
  std::optional<BpeModel> model_;
  AddedVocabulary added_;
  PostProcessor post_processor_;
  Decoder decoder_;
  int32_t vocab_size_ = 0;
  // Per ASCII character: whether a piece is cut after "\n" before it.
  std::array<bool, 128> cut_before_{};
  bool any_cut_ = false;
  mutable PerThread<PieceCache> piece_caches_;
  std::unique_ptr<PrefixCache> prefix_cache_;
};

}  // namespace warmroute::tokenize
