#include "emulator/builtin_model_text.h"

#include "core/request/chat_template.h"

namespace warmroute::emulator {

BuiltinModelText::BuiltinModelText() = default;

absl::StatusOr<std::string> BuiltinModelText::RenderChat(
    const request::InferenceRequest& request) const {
  return request::RenderChat(request.messages, request.tools, request.add_generation_prompt);
}

std::vector<int32_t> BuiltinModelText::Encode(std::string_view text,
                                              bool /*add_special_tokens*/) const {
  return tokenizer_.Encode(text);
}

ModelText::Tokens BuiltinModelText::Tokenize(std::string_view text, bool /*add_special_tokens*/,
                                             bool token_strs) const {
  std::vector<std::string_view> pieces;
  Tokens tokens;
  tokens.ids = tokenizer_.Encode(text, &pieces);
  token_texts_.Learn(tokens.ids, pieces);
  if (token_strs) tokens.strs.assign(pieces.begin(), pieces.end());
  return tokens;
}

std::string BuiltinModelText::Decode(std::span<const int32_t> ids) const {
  return token_texts_.Detokenize(ids);
}

}  // namespace warmroute::emulator
