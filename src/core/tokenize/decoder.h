// The decoder of a tokenizer.json: turns tokens back into text (ByteLevel, Metaspace,
// ByteFallback, Fuse, Strip, Replace and Sequences of them), as the Rust `tokenizers` library
// decodes. For a byte-level file, Decode(Encode(text)) == text.
//
// Usage:
//   absl::StatusOr<Decoder> d = Decoder::FromJson(json["decoder"]);
//   std::string text = d->Decode({"Hello", "Ġworld"});
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

class Decoder {
 public:
  // The decoder described by `json` (null: the tokens are joined as they are).
  static absl::StatusOr<Decoder> FromJson(simdjson::dom::element json,
                                          std::string_view where = "decoder");

  bool empty() const { return steps_.empty(); }

  // The text of `tokens` (each as the vocabulary spells it); with no steps, the tokens joined
  // with spaces (as the Rust library does without a decoder).
  std::string Decode(std::vector<std::string> tokens) const;

 private:
  enum class Kind { kByteLevel, kMetaspace, kByteFallback, kFuse, kStrip, kReplace };
  struct Step {
    Kind kind;
    Pattern pattern = Pattern::Literal(" ");  // kReplace
    std::string text{};          // kReplace: the replacement; kMetaspace, kStrip: the character
    bool prepend = true;         // kMetaspace: prepend_scheme is not "never"
    size_t start = 0, stop = 0;  // kStrip
  };

  static absl::Status AddSteps(simdjson::dom::element json, std::string_view where,
                               std::vector<Step>* steps);
  static void ApplyStep(const Step& step, std::vector<std::string>* tokens);

  std::vector<Step> steps_;
};

}  // namespace warmroute::tokenize
