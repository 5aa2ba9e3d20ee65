// POST /tokenize and POST /detokenize in vLLM's shapes, without I/O:
//
//   /tokenize    {"model", "prompt": string, "return_token_strs"}
//                or {"model", "messages": [...], "add_generation_prompt" (default true),
//                    "return_token_strs"}
//             -> {"count", "max_model_len", "tokens": [ids], "token_strs": [strings] or null}
//   /detokenize  {"model", "tokens": [ids]}  ->  {"prompt": text}
//
// Messages are read as chat's (core/request) and rendered with the chat template; the
// built-in tokenizer adds no BOS of its own (the template writes <|begin_of_text|>), so a text
// prompt's tokens are exactly the ones /v1/completions counts. Errors are InvalidArgument naming
// the parameter: neither or both of prompt and messages, a prompt that is not a string, token
// ids outside [0, 2^31).
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
  bool chat = false;                           // messages, else prompt
  std::string prompt;                          // !chat
  std::vector<request::ChatMessage> messages;  // chat
  bool add_generation_prompt = true;
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
