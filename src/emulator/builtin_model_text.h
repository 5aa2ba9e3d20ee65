// The emulator's default model text (model_text.h): the Llama-3-style chat template of
// core/request/chat_template.h and the built-in tokenizer, which need no model files.
//
// The built-in tokenizer has no special tokens of its own to add (the template writes
// <|begin_of_text|>), so add_special_tokens changes nothing. It hashes text pieces to ids and
// cannot be inverted: /detokenize answers from TokenTexts (token_texts.h), which learns every
// piece /tokenize returns; /tokenize's token_strs are those pieces. Answers start with a space
// (bare_chat_start() is false): the template does not trim content.
//
// Usage:
//   BuiltinModelText model;
//   std::vector<int32_t> ids = model.Encode(request::RenderPrompt(req), false);
//
// Thread-safety: every method may run on many threads at once (TokenTexts locks).
#pragma once

#include "core/engine/token_generator.h"
#include "core/request/tokenizer.h"
#include "emulator/model_text.h"
#include "emulator/token_texts.h"

namespace warmroute::emulator {

class BuiltinModelText final : public ModelText {
 public:
  BuiltinModelText();

  // request::RenderChat of the request's messages, tools and add_generation_prompt.
  absl::StatusOr<std::string> RenderChat(const request::InferenceRequest& request) const override;
  std::vector<int32_t> Encode(std::string_view text, bool add_special_tokens) const override;
  Tokens Tokenize(std::string_view text, bool add_special_tokens, bool token_strs) const override;
  std::string Decode(std::span<const int32_t> ids) const override;
  int32_t vocab_size() const override { return tokenizer_.VocabSize(); }
  const engine::TokenGenerator& generator() const override { return generator_; }
  bool bare_chat_start() const override { return false; }

  const TokenTexts& token_texts() const { return token_texts_; }

 private:
  request::BuiltinTokenizer tokenizer_;
  engine::TokenGenerator generator_{tokenizer_};
  mutable TokenTexts token_texts_{generator_};  // learns from Tokenize; locks itself
};

}  // namespace warmroute::emulator
