#include "emulator/tokenize.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "common/json_writer.h"
#include "common/status.h"
#include "core/request/json_fields.h"
#include "simdjson.h"

namespace warmroute::emulator {

using simdjson::dom::element;

absl::StatusOr<TokenizeRequest> ParseTokenizeRequest(const std::string& body) {
  simdjson::dom::parser parser;
  WR_ASSIGN_OR_RETURN(const simdjson::dom::object fields, request::ParseJsonObject(parser, body));
  TokenizeRequest request;
  std::optional<element> prompt;
  bool has_messages = false;
  std::optional<bool> add_special_tokens;
  for (simdjson::dom::key_value_pair field : fields) {
    const std::string_view key = field.key;
    if (key == "model") {
      WR_RETURN_IF_ERROR(request::ParseString(field.value, "model", request.model));
    } else if (key == "prompt") {
      prompt = field.value;
    } else if (key == "messages") {
      has_messages = true;
    } else if (key == "add_special_tokens") {
      if (!field.value.is_null()) {
        bool add = false;
        WR_RETURN_IF_ERROR(request::ParseBool(field.value, "add_special_tokens", false, add));
        add_special_tokens = add;
      }
    } else if (key == "return_token_strs") {
      WR_RETURN_IF_ERROR(
          request::ParseBool(field.value, "return_token_strs", false, request.return_token_strs));
    }
  }
  if (prompt.has_value() == has_messages) {
    return InvalidParam(has_messages ? "messages" : "prompt",
                        "Give either 'prompt' (a string) or 'messages' (a chat).");
  }
  if (prompt) {
    if (!prompt->is_string()) return request::WrongType("prompt", "a string", *prompt);
    request.prompt.assign(prompt->get_string().value_unsafe());
    request.add_special_tokens = add_special_tokens.value_or(true);
    return request;
  }
  // The chat as /v1/chat/completions reads it (the fields that do not reach the template, such
  // as max_tokens, are ignored here).
  absl::StatusOr<request::InferenceRequest> chat =
      request::ParseInferenceRequest(request::Endpoint::kChatCompletions, body);
  if (!chat.ok()) return chat.status();
  request.chat = true;
  request.chat_request = *std::move(chat);
  request.add_special_tokens = add_special_tokens.value_or(false);
  return request;
}

std::string TokenizeResponse(std::span<const int32_t> tokens, int64_t max_model_len,
                             const std::vector<std::string>* token_strs) {
  std::string out;
  out.reserve(64 + tokens.size() * 8);
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("count").Int(static_cast<int64_t>(tokens.size()));
  w.Key("max_model_len").Int(max_model_len);
  w.Key("tokens").BeginArray();
  for (int32_t id : tokens) w.Int(id);
  w.EndArray();
  w.Key("token_strs");
  if (token_strs == nullptr) {
    w.Null();
  } else {
    w.BeginArray();
    for (const std::string& text : *token_strs) w.String(text);
    w.EndArray();
  }
  w.EndObject();
  return out;
}

absl::StatusOr<DetokenizeRequest> ParseDetokenizeRequest(std::string_view body) {
  simdjson::dom::parser parser;
  WR_ASSIGN_OR_RETURN(const simdjson::dom::object fields, request::ParseJsonObject(parser, body));
  DetokenizeRequest request;
  std::optional<element> tokens;
  for (simdjson::dom::key_value_pair field : fields) {
    const std::string_view key = field.key;
    if (key == "model") {
      WR_RETURN_IF_ERROR(request::ParseString(field.value, "model", request.model));
    } else if (key == "tokens") {
      tokens = field.value;
    }
  }
  if (!tokens) return InvalidParam("tokens", "'tokens' is required");
  if (!tokens->is_array()) return request::WrongType("tokens", "an array of token ids", *tokens);
  const simdjson::dom::array ids = tokens->get_array().value_unsafe();
  size_t index = 0;
  for (element item : ids) {
    const std::optional<int32_t> id = request::AsTokenId(item);
    if (!id) {
      return InvalidParam("tokens",
                          absl::StrCat("tokens[", index, "] is not a token id in [0, 2^31)"));
    }
    request.tokens.push_back(*id);
    ++index;
  }
  return request;
}

std::string DetokenizeResponse(std::string_view prompt) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("prompt").String(prompt);
  w.EndObject();
  return out;
}

}  // namespace warmroute::emulator
