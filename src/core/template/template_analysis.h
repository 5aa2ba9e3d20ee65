// What vLLM reads from a chat template's syntax tree before rendering it:
//   - the variables it uses without assigning them (jinja2.meta.find_undeclared_variables):
//     vLLM passes a request's chat_template_kwargs only when the template uses them
//     (vllm/renderers/hf.py resolve_chat_template_kwargs);
//   - whether it loops over a message's content (`for part in message['content']`, following
//     `set` aliases of `messages` and the loops over them): vLLM then hands the template content
//     as a list of {"type": "text", "text": ...} parts, else as one string
//     (vllm/renderers/hf.py _detect_content_format).
//
// Thread-safety: pure functions.
#pragma once

#include <set>
#include <string>

#include "core/template/ast.h"

namespace warmroute::jinja {

std::set<std::string> UndeclaredVariables(const Body& program);

bool LoopsOverMessageContent(const Body& program);

}  // namespace warmroute::jinja
