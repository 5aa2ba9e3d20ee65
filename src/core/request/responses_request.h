// The body of an OpenAI Responses API request (POST /v1/responses) read into an
// InferenceRequest, as vLLM's serving_responses turns it into chat messages for a model without
// the harmony format:
//
//   instructions (a non-empty string)  -> a leading {"role": "system"} message
//   tools (a list)                     -> `tools`, rendered at the end of the system part
//   input: a string                    -> one {"role": "user"} message
//   input: a list of items, in order:
//     {"type": "message"} or {"role": ...} (no type), content a string or a list of
//         input_text / output_text / text parts (joined with "\n")  -> a message of that role
//     {"type": "function_call", "call_id", "name", "arguments"}
//         -> an assistant message: {"name": <name as a JSON string>, "parameters": <arguments>}
//            (Llama 3.1's tool-call form; `arguments` is the JSON text the model produced)
//     {"type": "function_call_output", "call_id", "output"}    -> a {"role": "tool"} message
//     {"type": "reasoning", ...}                                -> nothing
//
// Reasoning items are dropped: vLLM attaches them to the adjacent assistant message as its
// `reasoning`, which a template without a thinking section (Llama 3's) does not render.
// Also read: model, max_output_tokens (-> max_tokens), stream, store (default true),
// background (default false), previous_response_id (a string or null), request_id (vLLM's
// extension: the response's id; a non-empty string), cache_salt, user, seed, ignore_eos.
// Other fields (temperature, top_p, metadata, reasoning, text, tool_choice, ...) are ignored.
//
// Errors (InvalidArgument naming the parameter), as vLLM's ResponsesRequest validates: a
// missing `input`; wrong types; an item that is not an object, of an unsupported type or
// missing a required field; a non-text content part; max_output_tokens < 1; background without
// store ("background can only be used when `store` is true"); a non-null `prompt` ("prompt
// template is not supported"); an empty request_id or cache_salt.
//
// Internal to core/request: callers use ParseInferenceRequest(Endpoint::kResponses, ...).
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "core/request/inference_request.h"
#include "simdjson.h"

namespace warmroute::request {

// Reads the Responses fields of `root` (a JSON object) into `out`, whose fields were already
// reset to a new request's.
absl::Status ParseResponsesFields(simdjson::dom::object root, InferenceRequest& out);

// The text an assistant message of a tool call renders as: {"name": "<name>", "parameters":
// <arguments>}, `name` as a JSON string and `arguments` as given. Shared with the Messages API.
std::string ToolCallText(std::string_view name, std::string_view arguments);

}  // namespace warmroute::request
