#include "gateway/config/config_reader.h"

#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace warmroute::gateway {

using Type = ConfigNode::Type;

namespace {
constexpr int64_t kMaxMillis = 86'400'000;  // one day: no timeout or interval is longer
}  // namespace

// "got" part of a message: strings quoted, other scalars as written, containers by type.
std::string Describe(const ConfigNode& node) {
  if (node.type == Type::kString) return absl::StrCat("'", node.text, "'");
  if (node.is_scalar()) return node.text;
  return std::string(TypeName(node.type));
}

// InvalidArgument "<path>: <message> (line N)", with `path` attached as the offending param.
absl::Status KeyError(std::string_view path, const ConfigNode* node, std::string_view message) {
  std::string text = absl::StrCat(std::string(path), ": ", std::string(message));
  if (node != nullptr && node->line > 0) absl::StrAppend(&text, " (line ", node->line, ")");
  return InvalidParam(path, text);
}

absl::Status WrongType(std::string_view path, const ConfigNode& node, std::string_view expected) {
  return KeyError(path, &node,
                  absl::StrCat("expected ", std::string(expected), ", got ", Describe(node)));
}



// The message for `value` outside [min, max].
std::string RangeMessage(int64_t value, int64_t min, int64_t max) {
  if (value < min) {
    return min == 1 ? absl::StrCat("must be > 0, got ", value)
                    : absl::StrCat("must be >= ", min, ", got ", value);
  }
  return absl::StrCat("must be <= ", max, ", got ", value);
}

// An integer in [min, max] (an integral float such as 8080.0 counts as an integer).
absl::Status ReadInt(const ConfigNode* node, std::string_view path, int64_t min, int64_t max,
                     int64_t* out) {
  if (node == nullptr) return absl::OkStatus();
  int64_t value = 0;
  if (node->type == Type::kInt) {
    value = node->int_value;
  } else if (node->type == Type::kDouble &&
             std::nearbyint(node->double_value) == node->double_value &&
             std::abs(node->double_value) < 9.0e15) {
    value = static_cast<int64_t>(node->double_value);
  } else {
    return WrongType(path, *node, "an integer");
  }
  if (value < min || value > max) return KeyError(path, node, RangeMessage(value, min, max));
  *out = value;
  return absl::OkStatus();
}


// Milliseconds in [min_ms, one day].
absl::Status ReadMillis(const ConfigNode* node, std::string_view path, int64_t min_ms,
                        std::chrono::milliseconds* out) {
  int64_t ms = out->count();
  WR_RETURN_IF_ERROR(ReadInt(node, path, min_ms, kMaxMillis, &ms));
  *out = std::chrono::milliseconds(ms);
  return absl::OkStatus();
}

absl::Status ReadBool(const ConfigNode* node, std::string_view path, bool* out) {
  if (node == nullptr) return absl::OkStatus();
  if (node->type != Type::kBool) return WrongType(path, *node, "true or false");
  *out = node->bool_value;
  return absl::OkStatus();
}

// A string; an unquoted YAML scalar counts as its text (`name: 123` is "123").
absl::Status ReadString(const ConfigNode* node, std::string_view path, std::string* out) {
  if (node == nullptr) return absl::OkStatus();
  if (node->type != Type::kString && !(node->plain && node->is_scalar())) {
    return WrongType(path, *node, "a string");
  }
  *out = node->text;
  return absl::OkStatus();
}

absl::Status ReadNonEmptyString(const ConfigNode* node, std::string_view path, std::string* out) {
  std::string value = *out;
  WR_RETURN_IF_ERROR(ReadString(node, path, &value));
  if (value.empty()) return KeyError(path, node, "must not be empty");
  *out = std::move(value);
  return absl::OkStatus();
}

// A finite number.
absl::Status ReadDouble(const ConfigNode* node, std::string_view path, double* out) {
  if (node == nullptr) return absl::OkStatus();
  double value = 0;
  if (node->type == Type::kInt) {
    value = static_cast<double>(node->int_value);
  } else if (node->type == Type::kDouble) {
    value = node->double_value;
  } else {
    return WrongType(path, *node, "a number");
  }
  if (!std::isfinite(value)) return KeyError(path, node, "must be a finite number");
  *out = value;
  return absl::OkStatus();
}

// A printable ASCII word (no spaces or control characters): backend names and the admin token
// go into HTTP headers and logs.
absl::Status CheckToken(const ConfigNode* node, std::string_view path, std::string_view value) {
  for (char c : value) {
    if (c <= ' ' || c > '~') {
      return KeyError(path, node, "must be printable ASCII without spaces");
    }
  }
  return absl::OkStatus();
}

absl::Status ReadStringList(const ConfigNode* node, std::string_view path,
                            std::vector<std::string>* out) {
  if (node == nullptr) return absl::OkStatus();
  if (node->type != Type::kList) return WrongType(path, *node, "a list");
  for (size_t i = 0; i < node->items.size(); ++i) {
    std::string item;
    WR_RETURN_IF_ERROR(
        ReadNonEmptyString(&node->items[i], absl::StrCat(std::string(path), "[", i, "]"), &item));
    out->push_back(std::move(item));
  }
  return absl::OkStatus();
}

absl::Status MapReader::CheckMap(const ConfigNode& node, std::string_view path) {
  if (node.type != Type::kMap) return WrongType(path.empty() ? "config" : path, node, "a map");
  std::set<std::string_view> seen;
  for (const auto& [key, value] : node.entries) {
    if (!seen.insert(key).second) {
      return KeyError(Join(path, key), &value, "duplicate key");
    }
  }
  return absl::OkStatus();
}

const ConfigNode* MapReader::Get(std::string_view key) {
  known_.emplace_back(key);
  for (const auto& [k, value] : node_.entries) {
    if (k == key) return value.type == Type::kNull ? nullptr : &value;
  }
  return nullptr;
}

absl::Status MapReader::CheckNoUnknownKeys() const {
  for (const auto& [key, value] : node_.entries) {
    bool known = false;
    for (const std::string& k : known_) known = known || k == key;
    if (known) continue;
    std::string list;
    for (const std::string& k : known_) absl::StrAppend(&list, list.empty() ? "" : ", ", k);
    return KeyError(PathOf(key), &value, absl::StrCat("unknown key (known: ", list, ")"));
  }
  return absl::OkStatus();
}

std::string MapReader::Join(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(std::string(path), ".", std::string(key));
}

}  // namespace warmroute::gateway
