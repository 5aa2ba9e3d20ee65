// The post-processor of a tokenizer.json, for a single sequence: TemplateProcessing (its
// "single" template: special tokens around the text's ids), ByteLevel (offsets only: ids
// unchanged) and Sequences of them. It runs only when special tokens are asked for (vLLM encodes
// chat prompts without them, and completions prompts with them as the tokenizer's config says).
//
// Usage:
//   absl::StatusOr<PostProcessor> p = PostProcessor::FromJson(json["post_processor"]);
//   std::vector<int32_t> with_specials = p->Apply(ids);
//
// Thread-safety: const methods are thread-safe.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "simdjson.h"

namespace warmroute::tokenize {

class PostProcessor {
 public:
  // The post-processor described by `json` (null: none).
  static absl::StatusOr<PostProcessor> FromJson(simdjson::dom::element json,
                                                std::string_view where = "post_processor");

  // `ids` with the template's special tokens added.
  std::vector<int32_t> Apply(const std::vector<int32_t>& ids) const;

 private:
  static absl::Status AddTemplate(simdjson::dom::element json, std::string_view where,
                                  PostProcessor* out);

  bool has_template_ = false;
  std::vector<int32_t> before_;  // the template's special tokens before the sequence
  std::vector<int32_t> after_;   // and after it
};

}  // namespace warmroute::tokenize
