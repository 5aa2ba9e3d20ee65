// The pre-tokenizer of a tokenizer.json: Split (a literal or an Oniguruma regex, with its
// `behavior` and `invert`), ByteLevel (with or without its regex and prefix space), Metaspace,
// Digits, and Sequences of them. It cuts each normalized piece into the pre-tokens that the
// model encodes one by one, as the Rust `tokenizers` library does.
//
// ByteLevel's mapping of bytes to its 256-character alphabet is not applied to the text: a
// byte-level pipeline (byte_level()) hands raw bytes to the model, which maps each byte to its
// alphabet token (bpe_model.h). So ByteLevel must be the last stage.
//
// Cuts (see hf_tokenizer.h). CutAfterNewline() tells whether a piece may be cut after a "\n"
// that is followed by a printable ASCII character, pre-tokenizing the two parts apart, without
// changing the pre-tokens: kHard when a stage is known to split there whatever follows and
// every stage before it is "local" (kNeutral: its splits near the cut depend only on the two
// characters around it, and it treats the start of a part like the middle of a piece).
//
// Usage:
//   absl::StatusOr<PreTokenizer> p = PreTokenizer::FromJson(json["pre_tokenizer"]);
//   std::vector<Piece> pre_tokens;
//   p->Split(piece, &arena, &pre_tokens);
//
// Thread-safety: const methods are thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tokenize/pattern.h"
#include "core/tokenize/piece.h"
#include "simdjson.h"

namespace warmroute::tokenize {

class SplitMatcher;

// How a Split treats its matches (Rust's SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

enum class CutKind { kUnsafe, kNeutral, kHard };

class PreTokenizer {
 public:
  // The pre-tokenizer described by `json` (null: none). InvalidArgument naming an unsupported
  // type or setting.
  static absl::StatusOr<PreTokenizer> FromJson(simdjson::dom::element json,
                                               std::string_view where = "pre_tokenizer");

  // Appends the pre-tokens of `piece` (non-empty ones only) to `out`.
  void Split(const Piece& piece, Arena* arena, std::vector<Piece>* out) const;

  // True when a stage is ByteLevel: the model takes bytes, not characters.
  bool byte_level() const { return byte_level_; }

  // Whether a piece may be cut after "\n" before `after` (0x21 to 0x7E).
  CutKind CutAfterNewline(char after) const;

 private:
  enum class Kind { kSplit, kByteLevel, kMetaspace, kDigits };
  enum class Prepend { kAlways, kFirst, kNever };
  struct Stage {
    Kind kind = Kind::kSplit;
    // kSplit (and kByteLevel with its regex)
    std::shared_ptr<const Pattern> pattern;
    std::shared_ptr<const SplitMatcher> matcher;  // hand-written equivalent of `pattern`, if any
    SplitBehavior behavior = SplitBehavior::kIsolated;
    bool invert = false;
    // kByteLevel
    bool add_prefix_space = false;
    bool use_regex = false;
    // kMetaspace
    std::string replacement;
    Prepend prepend = Prepend::kAlways;
    bool split = true;
    // kDigits
    bool individual_digits = false;
  };

  static absl::Status AddStages(simdjson::dom::element json, std::string_view where,
                                std::vector<Stage>* stages);
  static void ApplyStage(const Stage& stage, const Piece& piece, Arena* arena,
                         std::vector<Piece>* out);
  static CutKind StageCut(const Stage& stage, char after);

  std::vector<Stage> stages_;
  bool byte_level_ = false;
};

}  // namespace warmroute::tokenize
