// The bodies of the Responses API (POST /v1/responses and its GET, DELETE and cancel), shaped as
// vLLM's ResponsesResponse and its streamed events (vllm/entrypoints/openai/responses/), with the
// field names of the official OpenAI SDK's types. Pure string building (common/json_writer.h).
//
// A response object: {"id", "created_at", "incomplete_details", "instructions", "metadata",
// "model", "object": "response", "output", "parallel_tool_calls", "temperature", "tool_choice",
// "tools", "top_p", "background", "max_output_tokens", "max_tool_calls", "previous_response_id",
// "prompt", "reasoning", "service_tier", "status", "store", "text", "top_logprobs",
// "truncation", "usage", "user", "input_messages", "output_messages"}. Once generated, `output` is
// one message item {"id": "msg_…", "type": "message", "role": "assistant", "status":
// "completed", "content": [{"type": "output_text", "text", "annotations": [], "logprobs": []}]}
// and `usage` is {"input_tokens", "input_tokens_details": {"cached_tokens"}, "output_tokens",
// "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens"}; before that (queued, in
// progress, cancelled) `output` is [] and `usage` null. An incomplete response has
// incomplete_details {"reason": "max_output_tokens"}. The emulator samples nothing:
// temperature and top_p are echoed as vLLM's defaults (1.0), tool_choice as "auto".
//
// A stream is SSE with named events, `event: <type>` then `data: <json>`, each with `type` and a
// `sequence_number` counting from 0, in vLLM's order, and no [DONE] (vLLM sends none):
//   response.created, response.in_progress          (the response in progress, output [])
//   response.output_item.added, response.content_part.added        (before the first text)
//   response.output_text.delta                                     (one per batch of tokens)
//   response.output_text.done, response.content_part.done, response.output_item.done
//   response.completed                              (the final response, with usage)
//
// Usage:
//   ResponseObject r = ...;
//   std::string body = ResponseJson(r);
//   ResponseEventWriter events(r.message_id);
//   std::string out;
//   events.AppendStart(&out, r);
//   events.AppendDelta(&out, " mesa");
//
// Thread-safety: plain values and pure functions; a ResponseEventWriter belongs to one stream.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace warmroute::emulator {

enum class ResponseStatus { kQueued, kInProgress, kCompleted, kIncomplete, kCancelled, kFailed };

// "queued", "in_progress", "completed", "incomplete", "cancelled", "failed".
std::string_view StatusName(ResponseStatus status);

// True while a background response may still be generating (queued or in progress).
bool IsUnfinished(ResponseStatus status);

// True when the response has its output (completed or incomplete).
bool HasOutput(ResponseStatus status);

struct ResponseTokens {
  int64_t input_tokens = 0;
  int64_t cached_tokens = 0;  // input tokens served from the prefix cache
  int64_t output_tokens = 0;
};

// What a response object says at one moment.
struct ResponseObject {
  std::string id;  // the request's request_id, or "resp_" + 32 hex digits
  int64_t created_at = 0;
  std::string model;
  ResponseStatus status = ResponseStatus::kQueued;
  std::optional<std::string> instructions;
  std::string tools;  // the request's tools list as JSON text; empty: []
  int64_t max_output_tokens = 0;
  std::optional<std::string> previous_response_id;
  bool background = false;
  bool store = true;
  std::string user;        // empty: null
  std::string message_id;  // the output message's id, "msg_" + 32 hex digits
  std::string text;        // the generated text, once completed or incomplete
  std::optional<ResponseTokens> usage;
};

// The response object's JSON.
std::string ResponseJson(const ResponseObject& response);

// DELETE /v1/responses/{id}: {"id": …, "object": "response", "deleted": true}.
std::string DeletedResponseJson(std::string_view id);

// The events of one streamed response, numbered from 0; each Append* appends complete events.
class ResponseEventWriter {
 public:
  explicit ResponseEventWriter(std::string message_id) : message_id_(std::move(message_id)) {}

  // response.created and response.in_progress, carrying `response` (status in progress).
  void AppendStart(std::string* out, const ResponseObject& response);
  // One response.output_text.delta, preceded the first time by response.output_item.added and
  // response.content_part.added.
  void AppendDelta(std::string* out, std::string_view delta);
  // response.output_text.done, response.content_part.done and response.output_item.done with
  // the whole text (after the item's added events, which it sends when no delta did), then
  // response.completed carrying `final_response`.
  void AppendEnd(std::string* out, const ResponseObject& final_response);

  int64_t next_sequence_number() const { return sequence_; }

 private:
  void AppendOpen(std::string* out);

  std::string message_id_;
  int64_t sequence_ = 0;
  bool opened_ = false;
};

}  // namespace warmroute::emulator
