#include "core/request/json_fields.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "common/status.h"

namespace warmroute::request {

using simdjson::dom::element;
using simdjson::dom::element_type;

absl::StatusOr<simdjson::dom::object> ParseJsonObject(simdjson::dom::parser& parser,
                                                      std::string_view body) {
  element root;
  if (const simdjson::error_code error = parser.parse(body.data(), body.size()).get(root);
      error != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat("Invalid JSON: ", std::string(simdjson::error_message(error))));
  }
  if (!root.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("The request body must be a JSON object, got ",
                                                   AbslView(JsonTypeName(root.type()))));
  }
  return root.get_object().value_unsafe();
}

std::string_view JsonTypeName(element_type type) {
  switch (type) {
    case element_type::ARRAY:
      return "an array";
    case element_type::OBJECT:
      return "an object";
    case element_type::INT64:
    case element_type::UINT64:
      return "an integer";
    case element_type::DOUBLE:
      return "a number";
    case element_type::STRING:
      return "a string";
    case element_type::BOOL:
      return "a boolean";
    case element_type::NULL_VALUE:
      return "null";
  }
  return "an unknown value";
}

absl::Status WrongType(std::string_view param, std::string_view expected, element value) {
  return InvalidParam(param, absl::StrCat("'", AbslView(param), "' must be ", AbslView(expected),
                                          ", got ", AbslView(JsonTypeName(value.type()))));
}

std::optional<int64_t> AsInt64(element value) {
  switch (value.type()) {
    case element_type::INT64:
      return value.get_int64().value_unsafe();
    case element_type::UINT64:
      return std::nullopt;  // above INT64_MAX: simdjson only uses UINT64 for those
    case element_type::DOUBLE: {
      const double d = value.get_double().value_unsafe();
      // 2^63 is exact as a double; the range is [-2^63, 2^63).
      if (std::nearbyint(d) != d || d < -9223372036854775808.0 || d >= 9223372036854775808.0) {
        return std::nullopt;
      }
      return static_cast<int64_t>(d);
    }
    default:
      return std::nullopt;
  }
}

bool IsJsonNumber(element value) {
  const element_type type = value.type();
  return type == element_type::INT64 || type == element_type::UINT64 ||
         type == element_type::DOUBLE;
}

std::optional<int32_t> AsTokenId(element value) {
  const std::optional<int64_t> id = IsJsonNumber(value) ? AsInt64(value) : std::nullopt;
  if (!id || *id < 0 || *id > std::numeric_limits<int32_t>::max()) return std::nullopt;
  return static_cast<int32_t>(*id);
}

absl::Status ParseString(element value, std::string_view param, std::string& out) {
  if (value.is_null()) {
    out.clear();
    return absl::OkStatus();
  }
  if (!value.is_string()) return WrongType(param, "a string", value);
  out.assign(value.get_string().value_unsafe());
  return absl::OkStatus();
}

absl::Status ParseOptionalString(element value, std::string_view param,
                                 std::optional<std::string>& out) {
  if (value.is_null()) {
    out.reset();
    return absl::OkStatus();
  }
  if (!value.is_string()) return WrongType(param, "a string or null", value);
  out.emplace(value.get_string().value_unsafe());
  return absl::OkStatus();
}

absl::Status ParseBool(element value, std::string_view param, bool default_value, bool& out) {
  if (value.is_null()) {
    out = default_value;
    return absl::OkStatus();
  }
  if (!value.is_bool()) return WrongType(param, "a boolean", value);
  out = value.get_bool().value_unsafe();
  return absl::OkStatus();
}

absl::Status ParsePositiveCount(element value, std::string_view param,
                                std::optional<int64_t>& out) {
  if (value.is_null()) {
    out.reset();
    return absl::OkStatus();
  }
  if (!IsJsonNumber(value)) return WrongType(param, "an integer or null", value);
  const std::optional<int64_t> n = AsInt64(value);
  if (!n) {
    if (value.type() == element_type::UINT64) {
      return InvalidParam(param, absl::StrCat(AbslView(param), " is too large"));
    }
    return WrongType(param, "an integer or null", value);
  }
  if (*n < 1) {
    return InvalidParam(param, absl::StrCat(AbslView(param), " must be at least 1, got ", *n, "."));
  }
  out = *n;
  return absl::OkStatus();
}

absl::Status ParseSeed(element value, std::optional<uint64_t>& out) {
  if (value.is_null()) {
    out.reset();
    return absl::OkStatus();
  }
  if (!IsJsonNumber(value)) return WrongType("seed", "an integer or null", value);
  const std::optional<int64_t> n = AsInt64(value);
  if (!n) {
    if (value.type() == element_type::UINT64) {
      return InvalidParam("seed", "seed must be within the signed 64-bit integer range");
    }
    return WrongType("seed", "an integer or null", value);
  }
  out = static_cast<uint64_t>(*n);  // two's complement: distinct seeds stay distinct
  return absl::OkStatus();
}

absl::Status ParseCacheSalt(element value, std::string& out) {
  if (value.is_null()) {
    out.clear();
    return absl::OkStatus();
  }
  if (!value.is_string() || value.get_string().value_unsafe().empty()) {
    return InvalidParam("cache_salt",
                        "Parameter 'cache_salt' must be a non-empty string if provided.");
  }
  out.assign(value.get_string().value_unsafe());
  return absl::OkStatus();
}

absl::Status ParseToolsJson(element value, std::string_view param, std::string& out) {
  out.clear();
  if (value.is_null()) return absl::OkStatus();
  if (!value.is_array()) return WrongType(param, "an array of tools or null", value);
  const simdjson::dom::array tools = value.get_array().value_unsafe();
  if (tools.size() == 0) return absl::OkStatus();
  size_t index = 0;
  for (element tool : tools) {
    if (!tool.is_object()) {
      return WrongType(absl::StrCat(AbslView(param), "[", index, "]"), "a tool object", tool);
    }
    ++index;
  }
  out = simdjson::minify(value);
  return absl::OkStatus();
}

}  // namespace warmroute::request
