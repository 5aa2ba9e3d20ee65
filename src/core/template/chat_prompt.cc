#include "core/template/chat_prompt.h"

#include "common/status.h"
#include "core/template/cat.h"
#include "core/template/json_value.h"

namespace warmroute::jinja {
namespace {

using request::ChatMessage;

Value Str(std::string_view s) { return Value::String(std::string(s)); }

Value TextPart(std::string text) {
  auto part = std::make_shared<Dict>();
  part->Set("type", Str("text"));
  part->Set("text", Value::String(std::move(text)));
  return Value::MakeDict(std::move(part));
}

// A message's content: one string, or (`as_parts`) the list of its text parts. `borrow`: the
// string refers to the request's (which then outlives the variables), as its role does.
Value Content(const ChatMessage& m, bool as_parts, bool borrow) {
  if (!as_parts || m.role == "tool") {
    return borrow ? Value::BorrowedString(m.content) : Str(m.content);
  }
  std::vector<Value> parts;
  if (m.content_form == ChatMessage::ContentForm::kString) {
    parts.push_back(TextPart(m.content));
  } else if (m.content_form == ChatMessage::ContentForm::kParts) {
    size_t offset = 0;
    for (uint32_t size : m.part_sizes) {
      parts.push_back(TextPart(m.content.substr(offset, size)));
      offset += size + 1;  // the "\n" joining the parts
    }
  }
  return Value::MakeList(std::move(parts));
}

// One tool call as the request's pydantic validation leaves it (the TypedDict's field order:
// id, function {arguments, name}, type), with `arguments` parsed from its JSON text.
absl::StatusOr<Value> ToolCall(const Value& call) {
  auto out = std::make_shared<Dict>();
  if (const Value* id = call.dict().Find("id")) out->Set("id", *id);
  const Value* function = call.dict().Find("function");
  if (function == nullptr || !function->is_dict()) {
    return absl::InvalidArgumentError("a tool call needs a 'function' object");
  }
  auto fn = std::make_shared<Dict>();
  Value arguments = Value::MakeDict(std::make_shared<Dict>());  // {} unless JSON text
  if (const Value* given = function->dict().Find("arguments")) {
    if (given->is_string()) {
      if (absl::StatusOr<Value> parsed = ValueFromJson(given->string_value()); parsed.ok()) {
        arguments = *std::move(parsed);
      }
    } else if (given->is_dict() || given->is_list()) {
      arguments = *given;
    }
  }
  fn->Set("arguments", std::move(arguments));
  if (const Value* name = function->dict().Find("name")) fn->Set("name", *name);
  out->Set("function", Value::MakeDict(std::move(fn)));
  if (const Value* type = call.dict().Find("type")) out->Set("type", *type);
  return Value::MakeDict(std::move(out));
}

absl::StatusOr<Value> Message(const ChatMessage& m, bool as_parts, bool borrow) {
  auto out = std::make_shared<Dict>();
  out->Reserve(4);
  out->Add("role", borrow ? Value::BorrowedString(m.role) : Str(m.role));
  out->Add("content", Content(m, as_parts, borrow));
  if (m.role == "assistant") {
    if (!m.tool_calls.empty()) {
      WR_ASSIGN_OR_RETURN(Value calls, ValueFromJson(m.tool_calls));
      std::vector<Value> normalized;
      for (const Value& call : calls.items()) {
        WR_ASSIGN_OR_RETURN(Value c, ToolCall(call));
        normalized.push_back(std::move(c));
      }
      // An empty list is dropped (_postprocess_messages).
      if (!normalized.empty()) out->Set("tool_calls", Value::MakeList(std::move(normalized)));
    }
    if (m.reasoning) {
      out->Set("reasoning", Str(*m.reasoning));
      out->Set("reasoning_content", Str(*m.reasoning));
    }
  } else if (m.role == "tool") {
    if (m.tool_call_id) out->Set("tool_call_id", Str(*m.tool_call_id));
  }
  if (m.name) out->Set("name", Str(*m.name));
  if (m.role == "developer") out->Set("tools", Value::None());
  return Value::MakeDict(std::move(out));
}

// ChatCompletionToolsParam.model_dump() of one request tool.
absl::StatusOr<Value> ToolDump(const Value& tool, size_t index) {
  const auto bad = [index](std::string_view what) {
    return absl::InvalidArgumentError(Cat("tools[", index, "]: ", what));
  };
  if (!tool.is_dict()) return bad("must be an object");
  const Value* type = tool.dict().Find("type");
  if (type != nullptr && !(type->is_string() && type->string_value() == "function")) {
    return bad("'type' must be 'function'");
  }
  const Value* function = tool.dict().Find("function");
  if (function == nullptr || !function->is_dict()) return bad("'function' must be an object");
  const Value* name = function->dict().Find("name");
  if (name == nullptr || !name->is_string()) return bad("'function.name' must be a string");
  const auto field = [&](std::string_view key) {
    const Value* v = function->dict().Find(key);
    return v != nullptr ? *v : Value::None();
  };
  const Value* defer = tool.dict().Find("defer_loading");
  auto fn = std::make_shared<Dict>();
  fn->Set("name", *name);
  fn->Set("description", field("description"));
  fn->Set("parameters", field("parameters"));
  if (Value strict = field("strict"); !strict.is_none()) fn->Set("strict", strict);
  Value fn_defer = field("defer_loading");
  // ChatCompletionToolsParam._propagate_defer_loading.
  if (fn_defer.is_none() && defer != nullptr && !defer->is_none()) fn_defer = *defer;
  if (!fn_defer.is_none()) fn->Set("defer_loading", fn_defer);
  auto out = std::make_shared<Dict>();
  out->Set("type", Str("function"));
  out->Set("function", Value::MakeDict(std::move(fn)));
  if (defer != nullptr && !defer->is_none()) out->Set("defer_loading", *defer);
  return Value::MakeDict(std::move(out));
}

// transformers' PreTrainedTokenizerBase.apply_chat_template parameters: accepted from
// chat_template_kwargs whatever the template reads (vLLM's _get_hf_base_chat_template_params),
// and not passed on to the template.
constexpr std::string_view kApplyParams[] = {"conversation",
                                             "tools",
                                             "documents",
                                             "chat_template",
                                             "add_generation_prompt",
                                             "continue_final_message",
                                             "tokenize",
                                             "padding",
                                             "truncation",
                                             "max_length",
                                             "return_tensors",
                                             "return_dict",
                                             "return_assistant_tokens_mask",
                                             "tokenizer_kwargs"};

bool IsApplyParam(std::string_view key) {
  for (std::string_view p : kApplyParams) {
    if (p == key) return true;
  }
  return false;
}

// ChatTemplateVariables; `borrow`: the messages' contents refer to the request's instead of
// copying them (REQUIRES: the request outlives the variables), and the model's special tokens
// are left out (the render reads them as fallback variables, RenderOptions).
absl::StatusOr<Value> Variables(const request::InferenceRequest& request,
                                const ModelTemplate& model, bool borrow) {
  using request::Endpoint;
  if (request.endpoint == Endpoint::kCompletions) {
    return absl::InvalidArgumentError("a completions request has no chat to render");
  }
  if (request.continue_final_message) {
    return absl::UnimplementedError("continue_final_message is not supported");
  }
  const bool chat = request.endpoint == Endpoint::kChatCompletions;
  if (!chat && !request.tools.empty()) {
    return absl::UnimplementedError("tools of the Responses and Messages APIs are not rendered");
  }
  const bool has_tools = !request.tools.empty();
  const Template& t = model.For(has_tools);
  const bool as_parts = t.loops_over_message_content();

  auto vars = std::make_shared<Dict>();
  if (!borrow) {
    vars->Reserve(model.special_tokens().dict().size() + 8);
    // A dict's keys are distinct: added without a search.
    for (const auto& [key, value] : model.special_tokens().dict().entries()) vars->Add(key, value);
  } else {
    vars->Reserve(8);
  }

  // chat_template_kwargs, overridden by the request's own fields (protocol.py build_chat_params,
  // params.py merge_kwargs), then kept when the template reads them (hf.py
  // resolve_chat_template_kwargs).
  static const Value* const kNoKwargs = new Value(Value::MakeDict(std::make_shared<Dict>()));
  Value kwargs = *kNoKwargs;
  if (!request.chat_template_kwargs.empty()) {
    WR_ASSIGN_OR_RETURN(kwargs, ValueFromJson(request.chat_template_kwargs));
  }
  bool sets_thinking = false;
  Value documents = Value::None();
  for (const auto& [key, value] : kwargs.dict().entries()) {
    if (key == "chat_template" || key == "tokenize") {
      return absl::InvalidArgumentError(
          Cat("Found unexpected chat template kwargs from request: {'", key, "'}"));
    }
    if (key == "conversation" || key == "tools" || key == "messages") {
      return absl::InvalidArgumentError(Cat("chat_template_kwargs may not set '", key, "'"));
    }
    sets_thinking |= key == "enable_thinking";
    if (key == "documents") {
      documents = value;
      continue;
    }
    if (IsApplyParam(key) || t.undeclared_variables().count(key) == 0) continue;
    vars->Set(key, value);
  }
  if (request.reasoning_effort && *request.reasoning_effort != "auto") {
    if (t.undeclared_variables().count("reasoning_effort")) {
      vars->Set("reasoning_effort", Str(*request.reasoning_effort));
    }
    if (!sets_thinking && t.undeclared_variables().count("enable_thinking")) {
      vars->Set("enable_thinking", Value::Bool(*request.reasoning_effort != "none"));
    }
  }

  std::vector<Value> messages;
  messages.reserve(request.messages.size());
  for (const ChatMessage& m : request.messages) {
    WR_ASSIGN_OR_RETURN(Value v, Message(m, as_parts, borrow));
    messages.push_back(std::move(v));
  }
  vars->Set("messages", Value::MakeList(std::move(messages)));
  if (has_tools) {
    WR_ASSIGN_OR_RETURN(Value given, ValueFromJson(request.tools));
    std::vector<Value> tools;
    for (size_t i = 0; i < given.items().size(); ++i) {
      WR_ASSIGN_OR_RETURN(Value tool, ToolDump(given.items()[i], i));
      tools.push_back(std::move(tool));
    }
    vars->Set("tools", Value::MakeList(std::move(tools)));
  } else {
    vars->Set("tools", Value::None());
  }
  vars->Set("documents", documents);
  vars->Set("add_generation_prompt", Value::Bool(request.add_generation_prompt));
  return Value::MakeDict(std::move(vars));
}

}  // namespace

absl::StatusOr<Value> ChatTemplateVariables(const request::InferenceRequest& request,
                                            const ModelTemplate& model) {
  return Variables(request, model, /*borrow=*/false);
}

absl::StatusOr<std::string> RenderChatPrompt(const request::InferenceRequest& request,
                                             const ModelTemplate& model,
                                             const RenderOptions& options) {
  // The variables die with the render, before the request.
  WR_ASSIGN_OR_RETURN(Value vars, Variables(request, model, /*borrow=*/true));
  RenderOptions sized = options;
  // Read where the variables lack a name: a key of chat_template_kwargs, set in the variables,
  // still hides a special token of the same name.
  sized.fallback_variables = &model.special_tokens();
  if (sized.expected_bytes == 0) {
    // The messages' text, and some for what the template adds around each and at the end.
    sized.expected_bytes = 1024;
    for (const ChatMessage& m : request.messages) sized.expected_bytes += m.content.size() + 64;
  }
  return model.For(!request.tools.empty()).Render(vars, sized);
}

}  // namespace warmroute::jinja
