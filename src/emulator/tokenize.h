// POST /tokenize and POST /detokenize in vLLM's shapes, without I/O
// (vllm/entrypoints/serve/tokenize/protocol.py):
//
//   /tokenize    {"model", "prompt": string, "add_special_tokens" (default true),
//                 "return_token_strs"}
//                or {"model", "messages": [...], "add_generation_prompt" (default true),
//                    "add_special_tokens" (default false), "tools", "chat_template_kwargs",
//                    "continue_final_message", "return_token_strs"}
//             -> {"count", "max_model_len", "tokens": [ids], "token_strs": [strings] or null}
//   /detokenize  {"model", "tokens": [ids]}  ->  {"prompt": text}
//
// Messages are read as chat's (core/request: the whole request, so the chat template sees its
// tools and kwargs as /v1/chat/completions would) and rendered by the process's ModelText
// (model_text.h); the defaults of add_special_tokens are vLLM's TokenizeCompletionRequest's and
// TokenizeChatRequest's, so a prompt's count is what /v1/completions or /v1/chat/completions
// counts for it. Errors are InvalidArgument naming the parameter: neither or both of prompt and
// messages, a prompt that is not a string, token ids outside [0, 2^31).
//
// Usage:
//   absl::StatusOr<TokenizeRequest> req = ParseTokenizeRequest(body);
//   std::string json = TokenizeResponse(ids, max_model_len, req->return_token_strs ? &strs :
//   nullptr);
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/request/inference_request.h"

namespace warmroute::emulator {

struct TokenizeRequest {
  std::string model;
  bool chat = false;  // messages, else prompt
  std::string prompt;  // !chat
  // chat: the body read as a chat request (messages, tools, add_generation_prompt, ...).
  request::InferenceRequest chat_request;
  bool add_special_tokens = true;  // given, or the default of the form (prompt or messages)
  bool return_token_strs = false;
};

absl::StatusOr<TokenizeRequest> ParseTokenizeRequest(const std::string& body);

// `token_strs` null: "token_strs": null.
std::string TokenizeResponse(std::span<const int32_t> tokens, int64_t max_model_len,
                             const std::vector<std::string>* token_strs);

struct DetokenizeRequest {
  std::string model;
  std::vector<int32_t> tokens;
};

absl::StatusOr<DetokenizeRequest> ParseDetokenizeRequest(std::string_view body);

std::string DetokenizeResponse(std::string_view prompt);

}  // namespace warmroute::emulator
