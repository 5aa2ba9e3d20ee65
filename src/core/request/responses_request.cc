#include "core/request/responses_request.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "common/json_writer.h"
#include "common/status.h"
#include "core/request/json_fields.h"
#include "core/request/message_list.h"

namespace warmroute::request {
namespace {

using simdjson::dom::element;

// "input[i]" or "input[i].field", built only for an error.
std::string ItemName(size_t index, std::string_view field = {}) {
  return field.empty() ? absl::StrCat("input[", index, "]")
                       : absl::StrCat("input[", index, "].", AbslView(field));
}

absl::Status Missing(size_t index, std::string_view field) {
  return InvalidParam(ItemName(index, field),
                      absl::StrCat("'", ItemName(index, field), "' is required"));
}

// A required string field of item `index`.
absl::Status RequiredString(std::optional<element> value, size_t index, std::string_view field,
                            std::string_view& out) {
  if (!value) return Missing(index, field);
  if (!value->is_string()) return WrongType(ItemName(index, field), "a string", *value);
  out = value->get_string().value_unsafe();
  return absl::OkStatus();
}

bool IsTextPart(std::string_view type) {
  return type == "input_text" || type == "output_text" || type == "text";
}

// Content of item `index` (a message's `content`, a function_call_output's `output`): a string,
// or a list of text parts joined with "\n".
absl::Status ParseTextContent(element value, size_t index, std::string_view field,
                              std::string& out) {
  out.clear();
  if (value.is_string()) {
    out.assign(value.get_string().value_unsafe());
    return absl::OkStatus();
  }
  const auto param = [&] { return ItemName(index, field); };
  if (!value.is_array()) return WrongType(param(), "a string or an array of content parts", value);
  size_t part_index = 0;
  const simdjson::dom::array parts = value.get_array().value_unsafe();
  for (element part : parts) {
    const auto part_name = [&] { return absl::StrCat(param(), "[", part_index, "]"); };
    if (!part.is_object()) return WrongType(param(), "an array of content part objects", part);
    const simdjson::dom::object fields = part.get_object().value_unsafe();
    element type;
    if (fields["type"].get(type) != simdjson::SUCCESS || !type.is_string()) {
      return InvalidParam(param(), absl::StrCat("'", part_name(), ".type' must be a string"));
    }
    const std::string_view type_name = type.get_string().value_unsafe();
    if (!IsTextPart(type_name)) {
      return InvalidParam(param(), absl::StrCat("only text content is supported, got a part of "
                                                "type '",
                                                AbslView(type_name), "' at ", part_name()));
    }
    element text;
    if (fields["text"].get(text) != simdjson::SUCCESS || !text.is_string()) {
      return InvalidParam(param(), absl::StrCat("'", part_name(), ".text' must be a string"));
    }
    if (part_index > 0) out.push_back('\n');
    out.append(text.get_string().value_unsafe());
    ++part_index;
  }
  return absl::OkStatus();
}

// One item of the `input` list.
absl::Status ParseItem(element item, size_t index, MessageList& messages) {
  if (!item.is_object()) return WrongType(ItemName(index), "an input item object", item);
  std::optional<element> type, role, content, name, arguments, call_id, output;
  const simdjson::dom::object fields = item.get_object().value_unsafe();
  for (simdjson::dom::key_value_pair field : fields) {
    const std::string_view key = field.key;
    if (key == "type") {
      type = field.value;
    } else if (key == "role") {
      role = field.value;
    } else if (key == "content") {
      content = field.value;
    } else if (key == "name") {
      name = field.value;
    } else if (key == "arguments") {
      arguments = field.value;
    } else if (key == "call_id") {
      call_id = field.value;
    } else if (key == "output") {
      output = field.value;
    }
  }
  std::string_view kind = "message";  // an item without a type and with a role is a message
  if (type && !type->is_null()) {
    if (!type->is_string()) return WrongType(ItemName(index, "type"), "a string", *type);
    kind = type->get_string().value_unsafe();
  } else if (!role) {
    return InvalidParam(ItemName(index),
                        absl::StrCat("'", ItemName(index), "' needs a 'type' or a 'role'"));
  }
  if (kind == "message") {
    std::string_view role_name;
    WR_RETURN_IF_ERROR(RequiredString(role, index, "role", role_name));
    ChatMessage& message = messages.Add(role_name);
    if (content && !content->is_null()) {
      WR_RETURN_IF_ERROR(ParseTextContent(*content, index, "content", message.content));
    }
    return absl::OkStatus();
  }
  if (kind == "function_call") {
    std::string_view call, function, args;
    WR_RETURN_IF_ERROR(RequiredString(call_id, index, "call_id", call));
    WR_RETURN_IF_ERROR(RequiredString(name, index, "name", function));
    WR_RETURN_IF_ERROR(RequiredString(arguments, index, "arguments", args));
    messages.Add("assistant").content = ToolCallText(function, args);
    return absl::OkStatus();
  }
  if (kind == "function_call_output") {
    std::string_view call;
    WR_RETURN_IF_ERROR(RequiredString(call_id, index, "call_id", call));
    if (!output) return Missing(index, "output");
    ChatMessage& message = messages.Add("tool");
    return ParseTextContent(*output, index, "output", message.content);
  }
  if (kind == "reasoning") return absl::OkStatus();
  return InvalidParam(
      ItemName(index, "type"),
      absl::StrCat("unsupported input item type '", AbslView(kind), "' at ", ItemName(index),
                   " (supported: message, function_call, "
                   "function_call_output, reasoning)"));
}

absl::Status ParseInput(element value, MessageList& messages) {
  if (value.is_string()) {
    messages.Add("user").content.assign(value.get_string().value_unsafe());
    return absl::OkStatus();
  }
  if (!value.is_array()) {
    return WrongType("input", "a string or an array of input items", value);
  }
  size_t index = 0;
  const simdjson::dom::array items = value.get_array().value_unsafe();
  for (element item : items) {
    WR_RETURN_IF_ERROR(ParseItem(item, index, messages));
    ++index;
  }
  return absl::OkStatus();
}

absl::Status ParseRequestId(element value, std::string& out) {
  out.clear();
  if (value.is_null()) return absl::OkStatus();
  if (!value.is_string() || value.get_string().value_unsafe().empty()) {
    return InvalidParam("request_id", "'request_id' must be a non-empty string if provided");
  }
  out.assign(value.get_string().value_unsafe());
  return absl::OkStatus();
}

}  // namespace

std::string ToolCallText(std::string_view name, std::string_view arguments) {
  std::string text = R"({"name": )";
  AppendJsonString(&text, name);
  text.append(R"(, "parameters": )");
  text.append(arguments);
  text.push_back('}');
  return text;
}

absl::Status ParseResponsesFields(simdjson::dom::object root, InferenceRequest& out) {
  std::optional<element> input;
  for (simdjson::dom::key_value_pair field : root) {
    const std::string_view key = field.key;
    const element value = field.value;
    if (key == "model") {
      WR_RETURN_IF_ERROR(ParseString(value, "model", out.model));
    } else if (key == "input") {
      input = value;
    } else if (key == "instructions") {
      WR_RETURN_IF_ERROR(ParseOptionalString(value, "instructions", out.instructions));
    } else if (key == "tools") {
      WR_RETURN_IF_ERROR(ParseToolsJson(value, "tools", out.tools));
    } else if (key == "max_output_tokens") {
      WR_RETURN_IF_ERROR(ParsePositiveCount(value, "max_output_tokens", out.max_tokens));
    } else if (key == "stream") {
      WR_RETURN_IF_ERROR(ParseBool(value, "stream", false, out.stream));
    } else if (key == "store") {
      WR_RETURN_IF_ERROR(ParseBool(value, "store", true, out.store));
    } else if (key == "background") {
      WR_RETURN_IF_ERROR(ParseBool(value, "background", false, out.background));
    } else if (key == "previous_response_id") {
      WR_RETURN_IF_ERROR(
          ParseOptionalString(value, "previous_response_id", out.previous_response_id));
    } else if (key == "request_id") {
      WR_RETURN_IF_ERROR(ParseRequestId(value, out.request_id));
    } else if (key == "cache_salt") {
      WR_RETURN_IF_ERROR(ParseCacheSalt(value, out.cache_salt));
    } else if (key == "user") {
      WR_RETURN_IF_ERROR(ParseString(value, "user", out.user));
    } else if (key == "seed") {
      WR_RETURN_IF_ERROR(ParseSeed(value, out.seed));
    } else if (key == "ignore_eos") {
      WR_RETURN_IF_ERROR(ParseBool(value, "ignore_eos", false, out.ignore_eos));
    } else if (key == "prompt" && !value.is_null()) {
      return InvalidParam("prompt", "prompt template is not supported");
    }
  }
  if (out.background && !out.store) {
    return InvalidParam("background", "background can only be used when `store` is true");
  }
  if (!input) return InvalidParam("input", "'input' is required");
  MessageList messages(out.messages);
  if (out.instructions && !out.instructions->empty()) {
    messages.Add("system").content.assign(*out.instructions);
  }
  return ParseInput(*input, messages);
}

}  // namespace warmroute::request
