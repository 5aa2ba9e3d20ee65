// Reading tokenizer.json fields with errors that name the field: "tokenizer.json:
// pre_tokenizer.pretokenizers[1].behavior must be a string".
//
// Thread-safety: stateless functions.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "simdjson.h"

namespace warmroute::tokenize {

// absl::StrCat that also takes std::string_view (Debian's Abseil has its own string_view).
template <typename T>
decltype(auto) ToAbsl(const T& v) {
  if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    const std::string_view view(v);
    return absl::string_view(view.data(), view.size());
  } else {
    return (v);
  }
}
template <typename... Args>
std::string Cat(const Args&... args) {
  return absl::StrCat(ToAbsl(args)...);
}

// InvalidArgument "tokenizer.json: <where> <what>".
absl::Status FileError(std::string_view where, std::string_view what);

// `json` as an object, or an error naming `where`.
absl::StatusOr<simdjson::dom::object> ObjectAt(simdjson::dom::element json, std::string_view where);

// The "type" member of a component object.
absl::StatusOr<std::string_view> TypeOf(simdjson::dom::object json, std::string_view where);

// A string member; `fallback` when absent or null (an error when absent and no fallback).
absl::StatusOr<std::string_view> StringMember(simdjson::dom::object json, std::string_view key,
                                              std::string_view where,
                                              std::optional<std::string_view> fallback = {});

// A string member that may be absent or null.
absl::StatusOr<std::optional<std::string>> OptionalStringMember(simdjson::dom::object json,
                                                                std::string_view key,
                                                                std::string_view where);

// A boolean member; `fallback` when absent or null (an error when absent and no fallback).
absl::StatusOr<bool> BoolMember(simdjson::dom::object json, std::string_view key,
                                std::string_view where, std::optional<bool> fallback = {});

// True when the member is absent or null.
bool IsAbsentOrNull(simdjson::dom::object json, std::string_view key);

// "<where>.<key>" and "<where>[<index>]".
std::string Member(std::string_view where, std::string_view key);
std::string Element(std::string_view where, size_t index);

// Calls `add(object, type, where)` for each component of `json` (a {"type": ...} object), in
// order, looking through {"type": "Sequence", `list_key`: [...]} at any depth.
using ComponentFn = std::function<absl::Status(simdjson::dom::object json, std::string_view type,
                                               std::string_view where)>;
absl::Status ForEachComponent(simdjson::dom::element json, std::string_view where,
                              std::string_view list_key, const ComponentFn& add);

// "<what> type '<type>' is not supported" as a FileError.
absl::Status Unsupported(std::string_view where, std::string_view type);

}  // namespace warmroute::tokenize
