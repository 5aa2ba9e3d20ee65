// A model's chat template as vLLM finds it in the model's tokenizer_config.json: the Jinja
// template ("chat_template": one string, or named templates of which vLLM uses "tool_use" for
// requests with tools when there is one, else "default") and the special tokens transformers
// hands every render (bos_token, eos_token, unk_token, sep_token, pad_token, cls_token,
// mask_token, additional_special_tokens: tokenizer.special_tokens_map).
//
// Usage:
//   absl::StatusOr<jinja::ModelTemplate> t = jinja::ModelTemplate::FromTokenizerConfig(json);
//   absl::StatusOr<std::string> prompt = jinja::RenderChatPrompt(request, *t, options);
//
// Thread-safety: immutable; shared by any number of renders.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/template/template.h"
#include "core/template/value.h"

namespace warmroute::jinja {

class ModelTemplate {
 public:
  // From tokenizer_config.json's text. InvalidArgument when it is not a JSON object, has no
  // chat_template, or the template does not parse (template.h). Integers beyond 64 bits (which
  // Python reads, and no template uses) are read as floats.
  static absl::StatusOr<ModelTemplate> FromTokenizerConfig(std::string_view json,
                                                           const Limits& limits = {});
  // From a template's source and the special tokens: a dict of strings (and a list of strings
  // for additional_special_tokens).
  static absl::StatusOr<ModelTemplate> Create(std::string_view source, Value special_tokens,
                                              const Limits& limits = {});

  // The template a request renders with: "tool_use" when it has tools and there is one.
  const Template& For(bool has_tools) const {
    return has_tools && tool_use_ ? *tool_use_ : default_;
  }
  // tokenizer.special_tokens_map: token names to their text.
  const Value& special_tokens() const { return special_tokens_; }

 private:
  ModelTemplate(Template default_template, std::optional<Template> tool_use, Value special_tokens)
      : default_(std::move(default_template)),
        tool_use_(std::move(tool_use)),
        special_tokens_(std::move(special_tokens)) {}

  Template default_;
  std::optional<Template> tool_use_;
  Value special_tokens_;
};

}  // namespace warmroute::jinja
