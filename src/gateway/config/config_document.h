// A configuration document as a small tree, whatever its syntax: the gateway's YAML config file
// and the admin API's JSON bodies both become a ConfigNode, so that one schema walker
// (config.cc) validates both and reports the same messages.
//
// YAML (yaml-cpp, YAML 1.2 core schema): an unquoted scalar is resolved as null (~, null, or
// nothing), a boolean (true/false, also capitalised or upper case), an integer ([-+]?[0-9]+), a
// float (1.5, 1e3, .inf, .nan), else a string; a quoted scalar (or one tagged !!str) is always a
// string. Lines are kept for messages. JSON (simdjson): types as written; no lines. Both keep
// map entries in source order, duplicate keys included (the schema walker rejects them).
// Limits against hostile input: 64 levels of nesting, 100,000 nodes (YAML aliases are expanded).
//
// Usage:
//   absl::StatusOr<ConfigNode> doc = ParseYamlDocument("listen: {port: 8080}");
//   doc->type == ConfigNode::Type::kMap;
//   doc->entries[0].first == "listen";
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace warmroute::gateway {

struct ConfigEntry;

struct ConfigNode {
  enum class Type { kNull, kBool, kInt, kDouble, kString, kList, kMap };

  Type type = Type::kNull;
  bool bool_value = false;  // kBool
  int64_t int_value = 0;    // kInt
  double double_value = 0;  // kDouble (also an integer too large for int64)
  // kString: the string. Other scalars: their text (the YAML source, or the JSON value).
  std::string text;
  // A YAML scalar written without quotes or tag: a config string may then be given as
  // `name: 123` (resolved as an integer) and still read as the string "123".
  bool plain = false;
  std::vector<ConfigNode> items;                            // kList
  std::vector<ConfigEntry> entries;                         // kMap
  int line = 0;  // 1-based source line; 0 when unknown (JSON)

  bool is_scalar() const { return type != Type::kList && type != Type::kMap; }
};

// One map entry: key and value, named like std::pair's members. A struct declared after
// ConfigNode rather than std::pair<std::string, ConfigNode> inside it: clang checks a pair's
// members for completeness where the vector is declared, while ConfigNode is still incomplete.
struct ConfigEntry {
  std::string first;
  ConfigNode second;
};

// "null", "a boolean", "an integer", "a number", "a string", "a list", "a map".
std::string_view TypeName(ConfigNode::Type type);

// The document of `yaml` (an empty document is a kNull node). InvalidArgument on a syntax error,
// naming its line and column ("line 3, column 7: ..."), or beyond the limits above.
absl::StatusOr<ConfigNode> ParseYamlDocument(std::string_view yaml);

// The document of `json`. InvalidArgument on invalid JSON or beyond the limits above.
absl::StatusOr<ConfigNode> ParseJsonDocument(std::string_view json);

}  // namespace warmroute::gateway
