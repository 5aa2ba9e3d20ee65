// The request model shared by the engine emulator, the gateway and the simulator: what a
// prompt-bearing request body asks for, parsed once and validated. Four APIs map onto it:
//
//   Endpoint          path                   prompt
//   kCompletions      /v1/completions        `prompt` (text or token ids)
//   kChatCompletions  /v1/chat/completions   `messages`
//   kResponses        /v1/responses          `instructions`, `tools`, `input` (OpenAI Responses)
//   kMessages         /v1/messages           `system`, `tools`, `messages` (Anthropic Messages)
//
// The last two are read into `messages` (and `tools`) as vLLM turns them into chat messages
// (responses_request.h, messages_request.h), so RenderPrompt gives the text the engine's chat
// template renders first, and requests that share a conversation's beginning share a prefix.
//
// Usage:
//   absl::StatusOr<InferenceRequest> req =
//       ParseInferenceRequest(Endpoint::kChatCompletions, body);
//   if (!req.ok()) return ToHttpError(req.status());   // 400 naming the bad parameter
//   std::string prompt = RenderPrompt(*req);            // canonical prompt text (chat template)
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace warmroute::request {

enum class Endpoint { kCompletions, kChatCompletions, kResponses, kMessages };

struct ChatMessage {
  // How a message's `content` was given. vLLM hands a chat template either one string (text
  // parts joined with "\n", nothing for null) or, to templates that loop over content, the parts
  // themselves: the form and the part boundaries are kept for that.
  enum class ContentForm : uint8_t { kString, kParts, kNull };

  std::string role;     // "system", "user", "assistant", "tool", ...
  std::string content;  // string content, or the text parts joined with "\n"
  ContentForm content_form = ContentForm::kString;
  std::vector<uint32_t> part_sizes = {};  // kParts: the byte size of each text part, in order
  // Chat only, as vLLM passes them to the chat template (core/template/chat_prompt.h):
  std::optional<std::string> name = {};          // "name", when a string
  std::optional<std::string> tool_call_id = {};  // role "tool": "tool_call_id", when a string
  std::string tool_calls =
      {};  // role "assistant": the `tool_calls` list as minified JSON, or empty
  std::optional<std::string> reasoning =
      {};  // role "assistant": "reasoning" (or "reasoning_content")

  bool operator==(const ChatMessage&) const = default;
};

struct InferenceRequest {
  Endpoint endpoint = Endpoint::kChatCompletions;
  std::string model;
  // Chat: the messages. Responses and Messages: the conversation they render as (the
  // instructions or system text first). Completions: empty.
  std::vector<ChatMessage> messages;
  // Chat, Responses and Messages: the `tools` list as minified JSON text, as the request gave it
  // (each API's own tool shape), rendered at the end of the system part (chat_template.h); empty
  // when there are none. Completions: empty.
  std::string tools;
  // Chat only, vLLM's extensions that reach the chat template (core/template/chat_prompt.h):
  bool add_generation_prompt = true;
  bool continue_final_message = false;
  std::string chat_template_kwargs;  // the object as minified JSON; empty when absent or null
  std::optional<std::string> reasoning_effort;
  // Chat and completions, vLLM's extension: whether the tokenizer's own special tokens (BOS) are
  // added when the prompt text is encoded; unset means the endpoint's default (vLLM's
  // CompletionRequest: true, ChatCompletionRequest: false).
  std::optional<bool> add_special_tokens;
  // Completions: the prompt, as text or as token ids (exactly one is used: see has_token_prompt).
  std::string prompt;
  std::vector<int32_t> prompt_token_ids;
  bool has_token_prompt = false;
  // max_tokens, max_completion_tokens (chat) or max_output_tokens (Responses); unset means the
  // server's default. Required by the Messages API.
  std::optional<int64_t> max_tokens;
  std::optional<int64_t> n;  // choices to generate; unset means 1
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::string cache_salt;      // vLLM's per-request prefix-cache isolation key
  bool ignore_eos = false;
  std::string user;
  std::optional<uint64_t> seed;

  // Responses only (OpenAI's /v1/responses and vLLM's extension `request_id`):
  std::optional<std::string> instructions;  // also messages[0] (role "system") when non-empty
  std::optional<std::string> previous_response_id;
  std::string request_id;  // the id the response gets; empty: the server picks one
  bool store = true;       // keep the response for GET and previous_response_id
  bool background = false;

  bool operator==(const InferenceRequest&) const = default;
};

// Parses and validates a request body. Errors are InvalidArgument with the offending parameter
// attached (common/status.h ParamOf): wrong types, a missing `messages` (chat) or `prompt`
// (completions), an empty messages list or prompt, non-text content parts, token ids outside
// [0, 2^31), max_tokens < 1, n < 1, an empty cache_salt, stream_options without stream=true;
// the Responses and Messages APIs' own rules are in responses_request.h and messages_request.h.
// Chat messages' `tool_calls` must be a list of objects, `chat_template_kwargs` an object.
// Malformed JSON (including integers beyond 64 bits) and a non-object body are InvalidArgument with
// no parameter. `model` is optional (empty: the server's default model); any optional field may be
// null, meaning unset. Chat takes max_completion_tokens over max_tokens. Unknown fields are
// ignored, as vLLM does.
absl::StatusOr<InferenceRequest> ParseInferenceRequest(Endpoint endpoint, std::string_view body);
// The same. When `body` has at least kParsePadding bytes of spare capacity, it is parsed in place
// (the parser reads past the end); otherwise it is copied, as above.
absl::StatusOr<InferenceRequest> ParseInferenceRequest(Endpoint endpoint, const std::string& body);
// The same into `out`, which may hold an earlier request: its strings and messages keep their
// memory, so a caller that parses request after request into one object (the gateway, per
// thread) allocates nothing for their text once warm. Every field is set as a new request's
// would be; after an error `out` holds a partial parse.
absl::Status ParseInferenceRequestInto(Endpoint endpoint, const std::string& body,
                                       InferenceRequest& out);
// Empties `request` and gives back the memory it holds (for such a reused object after a large
// request). Assigning it a new InferenceRequest would not: a std::string assigned an empty one
// keeps its memory.
void ReleaseInferenceRequest(InferenceRequest& request);
inline constexpr size_t kParsePadding = 64;

// The canonical prompt text: the chat template applied to `messages` and `tools` (with the
// generation prompt), or the completion prompt as given. REQUIRES: !request.has_token_prompt.
std::string RenderPrompt(const InferenceRequest& request);

}  // namespace warmroute::request
