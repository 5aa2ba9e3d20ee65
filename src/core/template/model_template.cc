#include "core/template/model_template.h"

#include "common/status.h"
#include "core/template/json_value.h"

namespace warmroute::jinja {
namespace {

constexpr std::string_view kTokenNames[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                            "pad_token", "cls_token", "mask_token"};

// A token as tokenizer_config.json writes it: a string, or an AddedToken {"content": ...}.
std::optional<std::string> TokenText(const Value& v) {
  if (v.is_string()) return v.string_value();
  if (v.is_dict()) {
    if (const Value* content = v.dict().Find("content"); content && content->is_string()) {
      return content->string_value();
    }
  }
  return std::nullopt;
}

// `json` with every integer literal outside strings that does not fit in 64 bits written as a
// float ("1000000000000000019884624838656" -> "1000000000000000019884624838656.0"). Python's
// json.loads reads such integers (Llama 3's model_max_length is one); the parser here cannot,
// and no template reads those settings.
std::string BigIntegersAsFloats(std::string_view json) {
  constexpr std::string_view kMaxDigits = "9223372036854775807";  // INT64_MAX
  std::string out;
  bool in_string = false;
  for (size_t i = 0; i < json.size();) {
    const char c = json[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\' && i + 1 < json.size()) {
        out.push_back(json[i + 1]);
        i += 2;
        continue;
      }
      if (c == '"') in_string = false;
      ++i;
      continue;
    }
    if (c == '"') in_string = true;
    if (c < '0' || c > '9') {
      out.push_back(c);
      ++i;
      continue;
    }
    size_t end = i;
    while (end < json.size() && json[end] >= '0' && json[end] <= '9') ++end;
    const std::string_view digits = json.substr(i, end - i);
    out.append(digits);
    // Digits after '.' or an exponent's 'e' belong to a float; so do digits before them.
    const auto exponent = [&](size_t at) { return json[at] == 'e' || json[at] == 'E'; };
    const bool after = i > 0 && (json[i - 1] == '.' || exponent(i - 1) ||
                                 ((json[i - 1] == '+' || json[i - 1] == '-') && i > 1 &&
                                  exponent(i - 2)));
    const bool fraction =
        after || (end < json.size() && (json[end] == '.' || exponent(end)));
    const bool too_big = digits.size() > kMaxDigits.size() ||
                         (digits.size() == kMaxDigits.size() && digits > kMaxDigits);
    if (too_big && !fraction) out.append(".0");
    i = end;
  }
  return out;
}

}  // namespace

absl::StatusOr<ModelTemplate> ModelTemplate::Create(std::string_view source, Value special_tokens,
                                                    const Limits& limits) {
  if (!special_tokens.is_dict()) {
    return absl::InvalidArgumentError("special tokens must be a dict");
  }
  WR_ASSIGN_OR_RETURN(Template t, Template::Parse(source, limits));
  return ModelTemplate(std::move(t), std::nullopt, std::move(special_tokens));
}

absl::StatusOr<ModelTemplate> ModelTemplate::FromTokenizerConfig(std::string_view json,
                                                                 const Limits& limits) {
  WR_ASSIGN_OR_RETURN(Value config, ValueFromJson(BigIntegersAsFloats(json)));
  if (!config.is_dict()) {
    return absl::InvalidArgumentError("tokenizer_config.json is not a JSON object");
  }
  auto tokens = std::make_shared<Dict>();
  for (std::string_view name : kTokenNames) {
    if (const Value* v = config.dict().Find(name)) {
      if (std::optional<std::string> text = TokenText(*v)) {
        tokens->Set(std::string(name), Value::String(*std::move(text)));
      }
    }
  }
  if (const Value* extra = config.dict().Find("additional_special_tokens");
      extra != nullptr && extra->is_list()) {
    std::vector<Value> texts;
    for (const Value& v : extra->items()) {
      if (std::optional<std::string> text = TokenText(v)) texts.push_back(Value::String(*text));
    }
    tokens->Set("additional_special_tokens", Value::MakeList(std::move(texts)));
  }
  const Value* chat_template = config.dict().Find("chat_template");
  if (chat_template == nullptr || chat_template->is_none()) {
    return absl::InvalidArgumentError("tokenizer_config.json has no chat_template");
  }
  if (chat_template->is_string()) {
    WR_ASSIGN_OR_RETURN(Template t, Template::Parse(chat_template->string_value(), limits));
    return ModelTemplate(std::move(t), std::nullopt, Value::MakeDict(std::move(tokens)));
  }
  // Named templates: [{"name": "default", "template": "..."}, {"name": "tool_use", ...}].
  std::optional<Template> default_template, tool_use;
  if (chat_template->is_list()) {
    for (const Value& entry : chat_template->items()) {
      if (!entry.is_dict()) continue;
      const Value* name = entry.dict().Find("name");
      const Value* source = entry.dict().Find("template");
      if (name == nullptr || source == nullptr || !name->is_string() || !source->is_string()) {
        continue;
      }
      if (name->string_value() != "default" && name->string_value() != "tool_use") continue;
      WR_ASSIGN_OR_RETURN(Template t, Template::Parse(source->string_value(), limits));
      (name->string_value() == "default" ? default_template : tool_use) = std::move(t);
    }
  }
  if (!default_template) {
    return absl::InvalidArgumentError("tokenizer_config.json has no default chat_template");
  }
  return ModelTemplate(*std::move(default_template), std::move(tool_use),
                       Value::MakeDict(std::move(tokens)));
}

}  // namespace warmroute::jinja
