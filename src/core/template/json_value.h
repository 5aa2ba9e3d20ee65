// JSON in and out of template values, as Python's json module does it: ValueFromJson is
// json.loads (objects keep their key order, "1" is an int and "1.0" a float), ToJson is
// json.dumps as transformers' `tojson` filter calls it (ensure_ascii=False by default).
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/template/value.h"

namespace warmroute::jinja {

// json.loads(text). InvalidArgument for malformed JSON and integers beyond 64 bits.
absl::StatusOr<Value> ValueFromJson(std::string_view text);

struct JsonOptions {
  // json.dumps(indent=N): one item per line, N spaces per level (0: newlines only); nullopt:
  // everything on one line.
  std::optional<int> indent;
  // json.dumps(separators=(item, key)); nullopt: (", ", ": ") without indent, (",", ": ") with.
  std::optional<std::string> item_separator;
  std::optional<std::string> key_separator;
  bool ensure_ascii = false;  // \uXXXX for every code point past ASCII
  bool sort_keys = false;
};

// json.dumps(v, ...): InvalidArgument for values JSON cannot hold (Undefined, namespaces,
// callables: "Object of type Undefined is not JSON serializable") or nesting deeper than
// `max_depth`.
absl::StatusOr<std::string> ToJson(const Value& v, const JsonOptions& options, int max_depth);

}  // namespace warmroute::jinja
