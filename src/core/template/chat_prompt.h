// The prompt text vLLM renders for a chat request with a model's Jinja chat template, as its
// OpenAI server does for /v1/chat/completions (vllm/renderers/hf.py HfRenderer.render_messages,
// which calls transformers' apply_chat_template with tokenize=False). The text is then encoded
// with add_special_tokens=False: BOS comes only from the template.
//
// What the template is handed, rule by rule (each from vLLM's source; docs/templates.md):
//   messages  each {"role", "content", ...} in this key order (chat_utils.py
//             _parse_chat_message_content builds ConversationMessage):
//     content    one string (text parts joined with "\n", "" for null), or, when the template
//                loops over message content (hf.py _detect_content_format), a list of
//                {"type": "text", "text"} parts ([] for null; a string parts one part); a tool
//                message's content is always a string;
//     tool_calls assistant: the list as given, each call as pydantic validates it
//                ({"id", "function": {"arguments", "name"}, "type"}), `arguments` parsed from
//                its JSON text ({} when it is not JSON; chat_utils.py _postprocess_messages); an
//                empty list is dropped;
//     reasoning, reasoning_content  assistant, when the request gave `reasoning` (or
//                `reasoning_content`);
//     tool_call_id  tool messages; name  any message whose name is a string;
//     tools      developer messages: None.
//   tools     None without tools, else each as ChatCompletionToolsParam.model_dump():
//             {"type": "function", "function": {"name", "description", "parameters"}}, missing
//             ones None, "strict" and "defer_loading" only when set (chat_completion/protocol.py,
//             generate/base/protocol.py FunctionDefinition).
//   documents None.
//   add_generation_prompt  the request's (default true).
//   the special tokens     bos_token, eos_token, ... (model_template.h).
//   chat_template_kwargs   each one the template reads (hf.py resolve_chat_template_kwargs); a
//             request's reasoning_effort is passed too, and sets enable_thinking (to
//             reasoning_effort != "none") unless the kwargs do (protocol.py build_chat_params).
//
// Thread-safety: pure function.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "core/request/inference_request.h"
#include "core/template/model_template.h"
#include "core/template/template.h"

namespace warmroute::jinja {

// The prompt of a chat request (Responses and Messages requests, already read into messages,
// render the same way, but only without tools: their tool shapes differ from chat's).
// InvalidArgument for what vLLM refuses with 400 (a template error, raise_exception, bad tools,
// chat_template_kwargs naming chat_template or tokenize), Unimplemented for continue_final_message
// and for Responses or Messages tools, ResourceExhausted past the template's limits.
absl::StatusOr<std::string> RenderChatPrompt(const request::InferenceRequest& request,
                                             const ModelTemplate& model,
                                             const RenderOptions& options);

// The variables RenderChatPrompt renders `model`'s template with (for tests and diagnostics).
absl::StatusOr<Value> ChatTemplateVariables(const request::InferenceRequest& request,
                                            const ModelTemplate& model);

}  // namespace warmroute::jinja
