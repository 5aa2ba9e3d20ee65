// The body of an Anthropic Messages API request (POST /v1/messages, which vLLM also serves) read
// into an InferenceRequest, as vLLM's Anthropic front end turns it into chat messages:
//
//   system: a string, or a list of {"type": "text", "text"} blocks joined with ""
//       -> a leading {"role": "system"} message. Blocks whose text starts with
//          "x-anthropic-billing-header" are skipped, as vLLM skips them (they carry a hash per
//          request that would defeat prefix caching); so is the text of messages with role
//          "system", which vLLM appends to the system text.
//   tools (a list)                      -> `tools`, rendered at the end of the system part
//   messages: [{"role": "user" | "assistant", "content": a string or a list of blocks}]
//     text {"text"}                     -> the message's text
//     tool_use {"id", "name", "input"}  -> {"name": <name>, "parameters": <input as JSON>} in the
//                                          message's text (ToolCallText, as the Responses API's
//                                          function calls)
//     tool_result {"tool_use_id", "content": a string or text blocks}
//                                       -> a {"role": "tool"} message, placed before the rest of
//                                          its message (vLLM's order)
//     thinking, redacted_thinking       -> nothing (no thinking section in the template)
//   The pieces of one message's text are joined with "\n"; a user message left with no text
//   (only tool results) adds no message of its own.
//   max_tokens (required, >= 1), stream, model; other fields (temperature, stop_sequences,
//   metadata, tool_choice, ...) are ignored.
//
// Errors (InvalidArgument naming the parameter): a missing `messages` or `max_tokens`, wrong
// types, a role other than user, assistant or system, a block of another type (image,
// document: only text is supported) or missing its text or name.
//
// Internal to core/request: callers use ParseInferenceRequest(Endpoint::kMessages, ...).
// Thread-safety: pure functions.
#pragma once

#include "absl/status/status.h"
#include "core/request/inference_request.h"
#include "simdjson.h"

namespace warmroute::request {

// Reads the Messages API fields of `root` (a JSON object) into `out`, whose fields were already
// reset to a new request's.
absl::Status ParseMessagesFields(simdjson::dom::object root, InferenceRequest& out);

}  // namespace warmroute::request
