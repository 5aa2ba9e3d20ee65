// How the model of an emulator process turns requests into token ids and ids into text: its chat
// template, its tokenizer and the words its engines generate. One is shared by every replica of
// the process, as the replicas of a real fleet serve one model with one tokenizer.
//
// Two kinds:
//   BuiltinModelText (builtin_model_text.h)  the default: the Llama-3-style template of
//       core/request/chat_template.h and the built-in hashing tokenizer; needs no files.
//   HfModelText (hf_model_text.h)            `warmroute engine --tokenizer DIR`: a real model's
//       Jinja chat template rendered as vLLM renders it and its tokenizer.json, giving vLLM's
//       exact prompt ids and text.
//
// What the endpoints ask of it, with vLLM's defaults for add_special_tokens (the request field):
//   chat, Responses   Encode(RenderChat(request), false)      (ChatCompletionRequest: false)
//   completions       Encode(prompt, true)                    (CompletionRequest: true)
//   embeddings        Encode(input, true)                     (EmbeddingCompletionRequest: true)
//   /tokenize         Tokenize(text, ...)                     (prompt: true, messages: false)
//   /detokenize       Decode(ids)
//
// Usage:
//   std::unique_ptr<ModelText> model = std::make_unique<BuiltinModelText>();
//   absl::StatusOr<std::string> text = model->RenderChat(chat_request);
//   std::vector<int32_t> ids = model->Encode(*text, /*add_special_tokens=*/false);
//
// Thread-safety: every method may run on many threads at once (the replicas' threads).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/engine/token_generator.h"
#include "core/request/inference_request.h"

namespace warmroute::emulator {

class ModelText {
 public:
  // What /tokenize answers for a text.
  struct Tokens {
    std::vector<int32_t> ids;
    std::vector<std::string> strs;  // one per id when asked for, else empty
  };

  ModelText() = default;
  ModelText(const ModelText&) = delete;
  ModelText& operator=(const ModelText&) = delete;
  virtual ~ModelText() = default;

  // The prompt text of a chat-shaped request: chat, or a Responses or Messages request read
  // into `messages` and `tools`. InvalidArgument (HTTP 400) when the template refuses the
  // request (raise_exception, bad tools, its limits); Unimplemented for what the renderer does
  // not support (core/template/chat_prompt.h).
  virtual absl::StatusOr<std::string> RenderChat(
      const request::InferenceRequest& request) const = 0;

  // The ids of `text`; with add_special_tokens, also the tokenizer's own special tokens (BOS)
  // where its post-processor puts them.
  virtual std::vector<int32_t> Encode(std::string_view text, bool add_special_tokens) const = 0;

  // /tokenize: Encode's ids and, with `token_strs`, each id's string as vLLM reports it.
  virtual Tokens Tokenize(std::string_view text, bool add_special_tokens,
                          bool token_strs) const = 0;

  // /detokenize: the text of `ids`. REQUIRES: every id in [0, vocab_size()).
  virtual std::string Decode(std::span<const int32_t> ids) const = 0;

  // Token ids are in [0, vocab_size()).
  virtual int32_t vocab_size() const = 0;

  // The words the engines generate; outlives nothing but this object.
  virtual const engine::TokenGenerator& generator() const = 0;

  // Whether chat and Responses answers start with a bare word (TokenGenerator), as a real
  // model's answer after the generation prompt does. It keeps an answer that is sent back
  // re-tokenizing to the generated ids where the template trims it (`content | trim`).
  virtual bool bare_chat_start() const = 0;
};

}  // namespace warmroute::emulator
