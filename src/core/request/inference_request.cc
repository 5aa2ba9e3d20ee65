#include "core/request/inference_request.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "common/status.h"
#include "core/request/chat_template.h"
#include "core/request/json_fields.h"
#include "core/request/messages_request.h"
#include "core/request/responses_request.h"
#include "simdjson.h"

// Validation follows vLLM's OpenAI server (protocol.py) where the two APIs agree:
// - every optional field may be null, meaning "unset";
// - `model` is optional (empty: the server's default model);
// - chat takes `max_completion_tokens` over the deprecated `max_tokens`;
// - `stream_options` (non-empty) requires `stream: true`; its `include_usage` defaults to true;
// - `cache_salt`, when given, must be a non-empty string;
// - integers must fit in 64 bits (larger ones fail as invalid JSON), integral floats such as
//   16.0 count as integers (pydantic's lax mode), booleans are JSON booleans only.
// Beyond vLLM: only text content parts, and only one prompt per completions request.

namespace warmroute::request {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// "messages[i]" or "messages[i].field": built only when a message is invalid (a valid request
// builds no names).
std::string MessageName(size_t index, std::string_view field = {}) {
  return field.empty() ? absl::StrCat("messages[", index, "]")
                       : absl::StrCat("messages[", index, "].", AbslView(field));
}

// `content` of message `message`: a string, null (no content, e.g. an assistant message with
// tool calls) or an array of text parts joined with "\n".
absl::Status ParseContent(element value, size_t message, ChatMessage& parsed) {
  std::string& out = parsed.content;
  out.clear();
  parsed.part_sizes.clear();
  if (value.is_null()) {
    parsed.content_form = ChatMessage::ContentForm::kNull;
    return absl::OkStatus();
  }
  if (value.is_string()) {
    parsed.content_form = ChatMessage::ContentForm::kString;
    out.assign(value.get_string().value_unsafe());
    return absl::OkStatus();
  }
  parsed.content_form = ChatMessage::ContentForm::kParts;
  const auto param = [message] { return MessageName(message, "content"); };
  if (!value.is_array()) {
    return WrongType(param(), "a string, an array of content parts or null", value);
  }
  size_t index = 0;
  const simdjson::dom::array parts = value.get_array().value_unsafe();
  for (element part : parts) {
    const auto part_name = [&] { return absl::StrCat(param(), "[", index, "]"); };
    if (!part.is_object()) return WrongType(part_name(), "a content part object", part);
    simdjson::dom::object fields = part.get_object().value_unsafe();
    element type;
    if (fields["type"].get(type) != simdjson::SUCCESS) {
      return InvalidParam(param(), absl::StrCat("'", part_name(), ".type' is required"));
    }
    if (!type.is_string()) return WrongType(param(), "a content part with a string 'type'", type);
    if (type.get_string().value_unsafe() != "text") {
      return InvalidParam(
          param(),
          absl::StrCat("only text content is supported, got a part of type '",
                       std::string(type.get_string().value_unsafe()), "' at ", part_name()));
    }
    element text;
    if (fields["text"].get(text) != simdjson::SUCCESS || !text.is_string()) {
      return InvalidParam(param(), absl::StrCat("'", part_name(), ".text' must be a string"));
    }
    if (index > 0) out.push_back('\n');
    out.append(text.get_string().value_unsafe());
    parsed.part_sizes.push_back(static_cast<uint32_t>(text.get_string().value_unsafe().size()));
    ++index;
  }
  return absl::OkStatus();
}

absl::Status ParseMessages(element value, std::vector<ChatMessage>& out) {
  if (!value.is_array()) return WrongType("messages", "an array", value);
  simdjson::dom::array messages = value.get_array().value_unsafe();
  if (messages.size() == 0) {
    return InvalidParam("messages", "'messages' must contain at least one message");
  }
  // The elements already in `out` are reused (their strings keep their memory); the rest added.
  out.resize(messages.size());
  size_t index = 0;
  for (element message : messages) {
    if (!message.is_object()) return WrongType(MessageName(index), "an object", message);
    ChatMessage& parsed = out[index];
    parsed.content.clear();  // an absent content is empty, as null
    parsed.content_form = ChatMessage::ContentForm::kNull;
    parsed.part_sizes.clear();
    parsed.name.reset();
    parsed.tool_call_id.reset();
    parsed.tool_calls.clear();
    parsed.reasoning.reset();
    std::optional<std::string> reasoning_content;
    bool has_role = false;
    const simdjson::dom::object fields = message.get_object().value_unsafe();
    for (simdjson::dom::key_value_pair field : fields) {
      if (field.key == "role") {
        if (!field.value.is_string()) {
          return WrongType(MessageName(index, "role"), "a string", field.value);
        }
        parsed.role.assign(field.value.get_string().value_unsafe());
        has_role = true;
      } else if (field.key == "content") {
        WR_RETURN_IF_ERROR(ParseContent(field.value, index, parsed));
      } else if (field.key == "name") {
        // vLLM keeps a name only when it is a string (chat_utils.py
        // _parse_chat_message_content).
        if (field.value.is_string()) parsed.name.emplace(field.value.get_string().value_unsafe());
      } else if (field.key == "tool_call_id") {
        if (field.value.is_string()) {
          parsed.tool_call_id.emplace(field.value.get_string().value_unsafe());
        }
      } else if (field.key == "tool_calls") {
        if (!field.value.is_null()) {
          if (!field.value.is_array()) {
            return WrongType(MessageName(index, "tool_calls"), "an array", field.value);
          }
          const simdjson::dom::array calls = field.value.get_array().value_unsafe();
          for (element call : calls) {
            if (!call.is_object()) {
              return WrongType(MessageName(index, "tool_calls"), "an array of objects", call);
            }
          }
          parsed.tool_calls = simdjson::minify(field.value);
        }
      } else if (field.key == "reasoning" || field.key == "reasoning_content") {
        std::optional<std::string>& target =
            field.key == "reasoning" ? parsed.reasoning : reasoning_content;
        WR_RETURN_IF_ERROR(ParseOptionalString(field.value, MessageName(index, field.key), target));
      }
    }
    // vLLM renames the older `reasoning_content` to `reasoning` when that is unset
    // (chat_completion/protocol.py ChatCompletionRequest._normalize_messages_before).
    if (!parsed.reasoning) parsed.reasoning = std::move(reasoning_content);
    if (!has_role) {
      return InvalidParam(MessageName(index, "role"),
                          absl::StrCat("'", MessageName(index, "role"), "' is required"));
    }
    ++index;
  }
  return absl::OkStatus();
}

// `prompt`: a non-empty string, a non-empty array of token ids in [0, 2^31), or an array holding
// exactly one non-empty string.
absl::Status ParsePrompt(element value, InferenceRequest& out) {
  constexpr std::string_view kEmpty = "Prompt cannot be empty";
  out.prompt.clear();
  out.prompt_token_ids.clear();
  out.has_token_prompt = false;
  if (value.is_string()) {
    if (value.get_string().value_unsafe().empty()) return InvalidParam("prompt", kEmpty);
    out.prompt.assign(value.get_string().value_unsafe());
    return absl::OkStatus();
  }
  if (!value.is_array()) {
    return WrongType("prompt", "a string, an array of token ids or an array of one string", value);
  }
  simdjson::dom::array items = value.get_array().value_unsafe();
  if (items.size() == 0) return InvalidParam("prompt", kEmpty);
  element first = items.at(0).value_unsafe();
  if (first.is_string()) {
    if (items.size() != 1) {
      return InvalidParam("prompt", "only one prompt per request is supported");
    }
    if (first.get_string().value_unsafe().empty()) return InvalidParam("prompt", kEmpty);
    out.prompt.assign(first.get_string().value_unsafe());
    return absl::OkStatus();
  }
  out.prompt_token_ids.reserve(items.size());
  size_t index = 0;
  for (element item : items) {
    if (!IsJsonNumber(item)) {
      return InvalidParam("prompt", absl::StrCat("prompt[", index, "] must be a token id, got ",
                                                 std::string(JsonTypeName(item.type()))));
    }
    const std::optional<int32_t> id = AsTokenId(item);
    if (!id) {
      return InvalidParam("prompt",
                          absl::StrCat("prompt[", index, "] is not a token id in [0, 2^31)"));
    }
    out.prompt_token_ids.push_back(*id);
    ++index;
  }
  out.has_token_prompt = true;
  return absl::OkStatus();
}

absl::Status ParseStreamOptions(element value, InferenceRequest& out) {
  out.include_usage = false;
  if (value.is_null()) return absl::OkStatus();
  if (!value.is_object()) return WrongType("stream_options", "an object or null", value);
  out.include_usage = true;  // vLLM's StreamOptions.include_usage defaults to true
  const simdjson::dom::object fields = value.get_object().value_unsafe();
  for (simdjson::dom::key_value_pair field : fields) {
    if (field.key == "include_usage") {
      WR_RETURN_IF_ERROR(
          ParseBool(field.value, "stream_options.include_usage", false, out.include_usage));
    }
  }
  return absl::OkStatus();
}

// Sets every field of `request` as a new request of `endpoint` has it. The strings and messages
// the endpoint's parser fills keep their memory.
void ResetFields(Endpoint endpoint, InferenceRequest& request) {
  request.endpoint = endpoint;
  request.model.clear();
  request.tools.clear();
  request.add_generation_prompt = true;
  request.continue_final_message = false;
  request.chat_template_kwargs.clear();
  request.reasoning_effort.reset();
  request.add_special_tokens.reset();
  request.max_tokens.reset();
  request.stream = false;
  request.include_usage = false;
  request.cache_salt.clear();
  request.ignore_eos = false;
  request.user.clear();
  request.seed.reset();
  request.n.reset();
  request.instructions.reset();
  request.previous_response_id.reset();
  request.request_id.clear();
  request.store = true;
  request.background = false;
  if (endpoint != Endpoint::kCompletions) {  // the prompt fields, as a new request has them
    request.prompt.clear();
    request.prompt_token_ids.clear();
    request.has_token_prompt = false;
  } else {
    request.messages.clear();
  }
}

// Parses into `request`, which may hold an earlier parse: every field is set, and the strings
// and messages already there keep their memory.
absl::Status ParseBody(Endpoint endpoint, element root, InferenceRequest& request) {
  if (!root.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("The request body must be a JSON object, got ",
                                                   std::string(JsonTypeName(root.type()))));
  }
  ResetFields(endpoint, request);
  const simdjson::dom::object fields = root.get_object().value_unsafe();
  if (endpoint == Endpoint::kResponses) return ParseResponsesFields(fields, request);
  if (endpoint == Endpoint::kMessages) return ParseMessagesFields(fields, request);
  const bool chat = endpoint == Endpoint::kChatCompletions;
  std::optional<element> messages, prompt, stream_options;
  std::optional<int64_t> max_tokens, max_completion_tokens;
  for (simdjson::dom::key_value_pair field : fields) {
    const std::string_view key = field.key;
    const element value = field.value;
    if (key == "model") {
      WR_RETURN_IF_ERROR(ParseString(value, "model", request.model));
    } else if (chat && key == "messages") {
      messages = value;
    } else if (!chat && key == "prompt") {
      prompt = value;
    } else if (key == "max_tokens") {
      WR_RETURN_IF_ERROR(ParsePositiveCount(value, "max_tokens", max_tokens));
    } else if (chat && key == "max_completion_tokens") {
      WR_RETURN_IF_ERROR(ParsePositiveCount(value, "max_completion_tokens", max_completion_tokens));
    } else if (key == "n") {
      WR_RETURN_IF_ERROR(ParsePositiveCount(value, "n", request.n));
    } else if (key == "stream") {
      WR_RETURN_IF_ERROR(ParseBool(value, "stream", false, request.stream));
    } else if (key == "stream_options") {
      stream_options = value;
    } else if (key == "cache_salt") {
      WR_RETURN_IF_ERROR(ParseCacheSalt(value, request.cache_salt));
    } else if (key == "ignore_eos") {
      WR_RETURN_IF_ERROR(ParseBool(value, "ignore_eos", false, request.ignore_eos));
    } else if (key == "user") {
      WR_RETURN_IF_ERROR(ParseString(value, "user", request.user));
    } else if (key == "seed") {
      WR_RETURN_IF_ERROR(ParseSeed(value, request.seed));
    } else if (chat && key == "tools") {
      WR_RETURN_IF_ERROR(ParseToolsJson(value, "tools", request.tools));
    } else if (key == "add_special_tokens") {
      if (!value.is_null()) {
        bool add = false;
        WR_RETURN_IF_ERROR(ParseBool(value, "add_special_tokens", false, add));
        request.add_special_tokens = add;
      }
    } else if (chat && key == "add_generation_prompt") {
      WR_RETURN_IF_ERROR(
          ParseBool(value, "add_generation_prompt", true, request.add_generation_prompt));
    } else if (chat && key == "continue_final_message") {
      WR_RETURN_IF_ERROR(
          ParseBool(value, "continue_final_message", false, request.continue_final_message));
    } else if (chat && key == "chat_template_kwargs") {
      if (!value.is_null()) {
        if (!value.is_object()) return WrongType("chat_template_kwargs", "an object", value);
        request.chat_template_kwargs = simdjson::minify(value);
      }
    } else if (chat && key == "reasoning_effort") {
      WR_RETURN_IF_ERROR(ParseOptionalString(value, "reasoning_effort", request.reasoning_effort));
    }
  }
  request.max_tokens = max_completion_tokens ? max_completion_tokens : max_tokens;

  if (stream_options) {
    WR_RETURN_IF_ERROR(ParseStreamOptions(*stream_options, request));
    const bool non_empty =
        stream_options->is_object() && stream_options->get_object().value_unsafe().size() > 0;
    if (non_empty && !request.stream) {
      return InvalidParam("stream_options",
                          "Stream options can only be defined when `stream=True`.");
    }
  }
  if (chat && request.continue_final_message && request.add_generation_prompt) {
    // vLLM's ChatCompletionRequest.check_generation_prompt.
    return InvalidParam("continue_final_message",
                        "Cannot set both `continue_final_message` and `add_generation_prompt` to "
                        "True.");
  }
  if (chat) {
    if (!messages) return InvalidParam("messages", "'messages' is required");
    WR_RETURN_IF_ERROR(ParseMessages(*messages, request.messages));
  } else {
    if (!prompt) return InvalidParam("prompt", "'prompt' is required");
    WR_RETURN_IF_ERROR(ParsePrompt(*prompt, request));
  }
  return absl::OkStatus();
}

}  // namespace

static_assert(kParsePadding >= simdjson::SIMDJSON_PADDING);

namespace {

// One parser per thread: its memory is reused across requests. Every string is copied out
// before the next parse invalidates the parser's views. `padded`: `data` may be read up to
// kParsePadding bytes past `size`.
absl::Status ParsePadded(Endpoint endpoint, const char* data, size_t size, InferenceRequest& out) {
  thread_local simdjson::dom::parser parser;
  element root;
  if (const simdjson::error_code error =
          parser.parse(data, size, /*realloc_if_needed=*/false).get(root);
      error != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat("Invalid JSON: ", std::string(simdjson::error_message(error))));
  }
  return ParseBody(endpoint, root, out);
}

// A padded copy of `body`, in a buffer per thread that keeps its memory across requests.
const char* PaddedCopy(std::string_view body) {
  thread_local std::string padded;
  if (padded.size() < body.size() + kParsePadding) padded.resize(body.size() + kParsePadding);
  if (!body.empty()) std::memcpy(padded.data(), body.data(), body.size());
  return padded.data();
}

absl::StatusOr<InferenceRequest> Parsed(absl::Status status, InferenceRequest request) {
  if (!status.ok()) return status;
  return request;
}

}  // namespace

absl::StatusOr<InferenceRequest> ParseInferenceRequest(Endpoint endpoint, std::string_view body) {
  InferenceRequest request;
  absl::Status status = ParsePadded(endpoint, PaddedCopy(body), body.size(), request);
  return Parsed(std::move(status), std::move(request));
}

absl::StatusOr<InferenceRequest> ParseInferenceRequest(Endpoint endpoint, const std::string& body) {
  InferenceRequest request;
  absl::Status status = ParseInferenceRequestInto(endpoint, body, request);
  return Parsed(std::move(status), std::move(request));
}

void ReleaseInferenceRequest(InferenceRequest& request) {
  InferenceRequest released;
  std::swap(request, released);  // the memory leaves with `released`
}

absl::Status ParseInferenceRequestInto(Endpoint endpoint, const std::string& body,
                                       InferenceRequest& out) {
  const char* data = body.capacity() - body.size() < kParsePadding ? PaddedCopy(body) : body.data();
  return ParsePadded(endpoint, data, body.size(), out);
}

std::string RenderPrompt(const InferenceRequest& request) {
  if (request.has_token_prompt) {
    std::fprintf(stderr, "RenderPrompt: the request has a token prompt, not text\n");
    std::abort();
  }
  if (request.endpoint == Endpoint::kCompletions) return request.prompt;
  return RenderChat(request.messages, request.tools, /*add_generation_prompt=*/true);
}

}  // namespace warmroute::request
