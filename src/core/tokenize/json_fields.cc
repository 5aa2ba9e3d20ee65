#include "core/tokenize/json_fields.h"

#include "absl/strings/str_cat.h"

namespace warmroute::tokenize {

absl::Status FileError(std::string_view where, std::string_view what) {
  return absl::InvalidArgumentError(Cat("tokenizer.json: ", where, " ", what));
}

absl::StatusOr<simdjson::dom::object> ObjectAt(simdjson::dom::element json,
                                               std::string_view where) {
  simdjson::dom::object object;
  if (json.get_object().get(object) != simdjson::SUCCESS) {
    return FileError(where, "must be an object");
  }
  return object;
}

absl::StatusOr<std::string_view> TypeOf(simdjson::dom::object json, std::string_view where) {
  return StringMember(json, "type", where);
}

bool IsAbsentOrNull(simdjson::dom::object json, std::string_view key) {
  simdjson::dom::element value;
  return json.at_key(key).get(value) != simdjson::SUCCESS || value.is_null();
}

absl::StatusOr<std::string_view> StringMember(simdjson::dom::object json, std::string_view key,
                                              std::string_view where,
                                              std::optional<std::string_view> fallback) {
  simdjson::dom::element value;
  if (json.at_key(key).get(value) != simdjson::SUCCESS || value.is_null()) {
    if (fallback.has_value()) return *fallback;
    return FileError(Member(where, key), "is missing");
  }
  std::string_view text;
  if (value.get_string().get(text) != simdjson::SUCCESS) {
    return FileError(Member(where, key), "must be a string");
  }
  return text;
}

absl::StatusOr<std::optional<std::string>> OptionalStringMember(simdjson::dom::object json,
                                                                std::string_view key,
                                                                std::string_view where) {
  if (IsAbsentOrNull(json, key)) return std::optional<std::string>();
  absl::StatusOr<std::string_view> text = StringMember(json, key, where);
  if (!text.ok()) return text.status();
  return std::optional<std::string>(std::string(*text));
}

absl::StatusOr<bool> BoolMember(simdjson::dom::object json, std::string_view key,
                                std::string_view where, std::optional<bool> fallback) {
  simdjson::dom::element value;
  if (json.at_key(key).get(value) != simdjson::SUCCESS || value.is_null()) {
    if (fallback.has_value()) return *fallback;
    return FileError(Member(where, key), "is missing");
  }
  bool b = false;
  if (value.get_bool().get(b) != simdjson::SUCCESS) {
    return FileError(Member(where, key), "must be true or false");
  }
  return b;
}

std::string Member(std::string_view where, std::string_view key) { return Cat(where, ".", key); }

std::string Element(std::string_view where, size_t index) { return Cat(where, "[", index, "]"); }

absl::Status ForEachComponent(simdjson::dom::element json, std::string_view where,
                              std::string_view list_key, const ComponentFn& add) {
  absl::StatusOr<simdjson::dom::object> object = ObjectAt(json, where);
  if (!object.ok()) return object.status();
  absl::StatusOr<std::string_view> type = TypeOf(*object, where);
  if (!type.ok()) return type.status();
  if (*type != "Sequence") return add(*object, *type, where);
  const std::string list = Member(where, list_key);
  simdjson::dom::array items;
  if ((*object)[list_key].get_array().get(items) != simdjson::SUCCESS) {
    return FileError(list, "must be an array");
  }
  size_t index = 0;
  for (simdjson::dom::element item : items) {
    absl::Status status = ForEachComponent(item, Element(list, index++), list_key, add);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status Unsupported(std::string_view where, std::string_view type) {
  return FileError(where, Cat("type '", type, "' is not supported"));
}

}  // namespace warmroute::tokenize
