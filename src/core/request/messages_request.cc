#include "core/request/messages_request.h"

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "common/status.h"
#include "core/request/json_fields.h"
#include "core/request/message_list.h"
#include "core/request/responses_request.h"

namespace warmroute::request {
namespace {

using simdjson::dom::element;

// Claude Code's attribution block: a hash per request, which vLLM leaves out of the prompt.
constexpr std::string_view kBillingHeader = "x-anthropic-billing-header";

// "messages[i]", "messages[i].content[j]", ...: built only for an error.
std::string MessageName(size_t index, std::string_view field = {}) {
  return field.empty() ? absl::StrCat("messages[", index, "]")
                       : absl::StrCat("messages[", index, "].", AbslView(field));
}

// The string field `key` of a block, or nullopt when it is absent or not a string.
std::optional<std::string_view> StringField(simdjson::dom::object block, std::string_view key) {
  element value;
  if (block[key].get(value) != simdjson::SUCCESS || !value.is_string()) return std::nullopt;
  return value.get_string().value_unsafe();
}

// The type of a content block named `name()`.
template <typename Name>
absl::StatusOr<std::string_view> BlockType(element block, const Name& name) {
  if (!block.is_object()) return WrongType(name(), "a content block object", block);
  std::optional<std::string_view> type = StringField(block.get_object().value_unsafe(), "type");
  if (!type) return InvalidParam(name(), absl::StrCat("'", name(), ".type' must be a string"));
  return *type;
}

// Text blocks ({"type": "text", "text": ...}) of `value` (a string or an array of blocks),
// appended to `out` with `separator` between them; billing-header blocks are skipped when
// `skip_billing`. `param` names the field.
absl::Status AppendTextBlocks(element value, std::string_view param, std::string_view separator,
                              bool skip_billing, std::string& out) {
  if (value.is_string()) {
    if (!out.empty()) out.append(separator);
    out.append(value.get_string().value_unsafe());
    return absl::OkStatus();
  }
  if (!value.is_array()) return WrongType(param, "a string or an array of text blocks", value);
  size_t index = 0;
  const simdjson::dom::array blocks = value.get_array().value_unsafe();
  for (element block : blocks) {
    const auto name = [&] { return absl::StrCat(AbslView(param), "[", index, "]"); };
    WR_ASSIGN_OR_RETURN(const std::string_view type, BlockType(block, name));
    if (type != "text") {
      return InvalidParam(param, absl::StrCat("only text blocks are supported here, got '",
                                              AbslView(type), "' at ", name()));
    }
    std::optional<std::string_view> text = StringField(block.get_object().value_unsafe(), "text");
    if (!text) return InvalidParam(param, absl::StrCat("'", name(), ".text' must be a string"));
    ++index;
    if (skip_billing && absl::StartsWith(AbslView(*text), AbslView(kBillingHeader))) continue;
    if (!out.empty()) out.append(separator);
    out.append(*text);
  }
  return absl::OkStatus();
}

// The content of block `j` of message `i`, a tool_result: a string, text blocks (joined with
// "\n") or nothing.
absl::Status ToolResultText(simdjson::dom::object block, size_t i, size_t j, std::string& out) {
  element content;
  if (block["content"].get(content) != simdjson::SUCCESS || content.is_null()) {
    return absl::OkStatus();
  }
  return AppendTextBlocks(content, MessageName(i, absl::StrCat("content[", j, "].content")), "\n",
                          /*skip_billing=*/false, out);
}

// The blocks of message `i` (`role` "user" or "assistant"): tool results become tool messages,
// the rest the message's text.
absl::Status ParseBlocks(simdjson::dom::array blocks, size_t i, std::string_view role,
                         MessageList& messages) {
  std::string text;
  bool has_text = false;
  const auto add_text = [&](std::string_view piece) {
    if (has_text) text.push_back('\n');
    text.append(piece);
    has_text = true;
  };
  size_t j = 0;
  for (element value : blocks) {
    const auto name = [&] { return MessageName(i, absl::StrCat("content[", j, "]")); };
    WR_ASSIGN_OR_RETURN(const std::string_view type, BlockType(value, name));
    const simdjson::dom::object block = value.get_object().value_unsafe();
    if (type == "text") {
      std::optional<std::string_view> block_text = StringField(block, "text");
      if (!block_text) {
        return InvalidParam(name(), absl::StrCat("'", name(), ".text' must be a string"));
      }
      add_text(*block_text);
    } else if (type == "tool_use") {
      std::optional<std::string_view> tool = StringField(block, "name");
      if (!tool) return InvalidParam(name(), absl::StrCat("'", name(), ".name' must be a string"));
      element input;
      std::string arguments = "{}";
      if (block["input"].get(input) == simdjson::SUCCESS && !input.is_null()) {
        if (!input.is_object())
          return WrongType(absl::StrCat(name(), ".input"), "an object", input);
        arguments = simdjson::minify(input);
      }
      add_text(ToolCallText(*tool, arguments));
    } else if (type == "tool_result") {
      std::string result;
      WR_RETURN_IF_ERROR(ToolResultText(block, i, j, result));
      if (role == "user") {
        messages.Add("tool").content = std::move(result);
      } else {
        add_text(absl::StrCat("Tool result: ", result));  // vLLM's form in other roles
      }
    } else if (type != "thinking" && type != "redacted_thinking") {
      return InvalidParam(name(), absl::StrCat("only text, tool_use, tool_result and thinking "
                                               "blocks are supported, got '",
                                               AbslView(type), "' at ", name()));
    }
    ++j;
  }
  if (has_text || role != "user") messages.Add(role).content = std::move(text);
  return absl::OkStatus();
}

// The role and content of message `i`, checked.
absl::Status RoleAndContent(element message, size_t i, std::string_view& role, element& content) {
  if (!message.is_object()) return WrongType(MessageName(i), "a message object", message);
  const simdjson::dom::object fields = message.get_object().value_unsafe();
  std::optional<std::string_view> role_value = StringField(fields, "role");
  if (!role_value) {
    return InvalidParam(MessageName(i, "role"),
                        absl::StrCat("'", MessageName(i, "role"), "' must be a string"));
  }
  role = *role_value;
  if (role != "user" && role != "assistant" && role != "system") {
    return InvalidParam(
        MessageName(i, "role"),
        absl::StrCat("'", MessageName(i, "role"), "' must be 'user' or 'assistant', got '",
                     AbslView(role), "'"));
  }
  if (fields["content"].get(content) != simdjson::SUCCESS) {
    return InvalidParam(MessageName(i, "content"),
                        absl::StrCat("'", MessageName(i, "content"), "' is required"));
  }
  if (!content.is_string() && !content.is_array()) {
    return WrongType(MessageName(i, "content"), "a string or an array of content blocks", content);
  }
  return absl::OkStatus();
}

absl::Status ParseConversation(std::optional<element> system, element value,
                               InferenceRequest& out) {
  if (!value.is_array()) return WrongType("messages", "an array", value);
  const simdjson::dom::array list = value.get_array().value_unsafe();
  // The system text first: the top-level `system`, then any system messages' text.
  std::string system_text;
  if (system && !system->is_null()) {
    WR_RETURN_IF_ERROR(AppendTextBlocks(*system, "system", "", /*skip_billing=*/true, system_text));
  }
  std::string_view role;
  element content;
  size_t i = 0;
  for (element message : list) {
    WR_RETURN_IF_ERROR(RoleAndContent(message, i, role, content));
    if (role == "system") {
      WR_RETURN_IF_ERROR(AppendTextBlocks(content, MessageName(i, "content"), "",
                                          /*skip_billing=*/true, system_text));
    }
    ++i;
  }
  MessageList messages(out.messages);
  if (!system_text.empty()) messages.Add("system").content = std::move(system_text);
  i = 0;
  for (element message : list) {
    WR_RETURN_IF_ERROR(RoleAndContent(message, i, role, content));
    if (role == "system") {
      // Already in the system text.
    } else if (content.is_string()) {
      messages.Add(role).content.assign(content.get_string().value_unsafe());
    } else {
      WR_RETURN_IF_ERROR(ParseBlocks(content.get_array().value_unsafe(), i, role, messages));
    }
    ++i;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseMessagesFields(simdjson::dom::object root, InferenceRequest& out) {
  std::optional<element> system, messages;
  for (simdjson::dom::key_value_pair field : root) {
    const std::string_view key = field.key;
    const element value = field.value;
    if (key == "model") {
      WR_RETURN_IF_ERROR(ParseString(value, "model", out.model));
    } else if (key == "messages") {
      messages = value;
    } else if (key == "system") {
      system = value;
    } else if (key == "tools") {
      WR_RETURN_IF_ERROR(ParseToolsJson(value, "tools", out.tools));
    } else if (key == "max_tokens") {
      WR_RETURN_IF_ERROR(ParsePositiveCount(value, "max_tokens", out.max_tokens));
    } else if (key == "stream") {
      WR_RETURN_IF_ERROR(ParseBool(value, "stream", false, out.stream));
    }
  }
  if (!messages) return InvalidParam("messages", "'messages' is required");
  if (!out.max_tokens) return InvalidParam("max_tokens", "'max_tokens' is required");
  return ParseConversation(system, *messages, out);
}

}  // namespace warmroute::request
