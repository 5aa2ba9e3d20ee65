// The normalizer of a tokenizer.json: NFC, NFKC, NFD, NFKD (ICU), Lowercase, Replace, Prepend and
// Sequences of them, applied as the Rust `tokenizers` library applies them — to each piece of
// text between two added tokens that are matched before normalization.
//
// Unicode versions. The Rust library normalizes with Unicode 9.0's tables (checked against it:
// U+0D3B, new in 10.0, is a starter to it): a code point assigned later is left as it is and
// combines with nothing, so the text around it is normalized run by run with ICU.
//
// Cuts. Normalize(a + b) == Normalize(a) + Normalize(b) (b normalized as a continuation: no
// Prepend) whenever `a` ends with "\n" and `b` starts with a printable ASCII character c,
// provided CutsAfterNewline(c): no Unicode normalization form composes, reorders or decomposes
// across a "\n" (a starter that takes part in no composition), lowercasing maps each character
// alone, and a literal Replace whose pattern holds no "\n" cannot match across such a cut (nor,
// when it holds no c in either case, change c, which a pre-tokenizer then sees as it is). A
// Replace with a regex may match anything: it rules cuts out.
//
// Usage:
//   absl::StatusOr<Normalizer> n = Normalizer::FromJson(json["normalizer"]);
//   std::string out;
//   if (n->Apply(text, /*at_piece_start=*/true, &out)) text = out;
//
// Thread-safety: const methods are thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tokenize/pattern.h"
#include "simdjson.h"

namespace warmroute::tokenize {

class Normalizer {
 public:
  // The normalizer described by `json` (null: none). InvalidArgument naming an unsupported type.
  static absl::StatusOr<Normalizer> FromJson(simdjson::dom::element json,
                                             std::string_view where = "normalizer");

  bool empty() const { return steps_.empty(); }

  // Writes the normalized `text` to `out` and returns true, or returns false (out unspecified)
  // when normalization leaves `text` unchanged. `at_piece_start` is false for a continuation of
  // a piece after a cut (a Prepend adds nothing there). REQUIRES: well-formed UTF-8.
  bool Apply(std::string_view text, bool at_piece_start, std::string* out) const;

  // True when pieces may be cut after a "\n" before `after` (0x21 to 0x7E; header comment).
  bool CutsAfterNewline(char after) const;

 private:
  enum class Kind { kNfc, kNfkc, kNfd, kNfkd, kLowercase, kReplace, kPrepend };
  struct Step {
    Kind kind;
    Pattern pattern = Pattern::Literal(" ");  // kReplace
    std::string text{};                       // kReplace: the replacement; kPrepend: the prefix
  };

  static absl::Status AddSteps(simdjson::dom::element json, std::string_view where,
                               std::vector<Step>* steps);
  static bool ApplyStep(const Step& step, std::string_view in, bool at_piece_start,
                        std::string* out);

  std::vector<Step> steps_;
};

}  // namespace warmroute::tokenize
