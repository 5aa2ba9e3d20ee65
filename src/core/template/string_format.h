// String building shared by filters and methods: Python's "%" formatting (Jinja's `format`
// filter), str.format() and str.replace(), each bounded in size.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/template/builtins.h"
#include "core/template/value.h"

namespace warmroute::jinja {

// `format % args`: %s %r %d %i %f %x %% with optional width and precision. InvalidArgument for
// other conversions or too few arguments.
absl::StatusOr<Value> PercentFormat(std::string_view format, const CallArgs& args,
                                    size_t max_bytes);

// format.format(*args, **kwargs): "{}", "{0}", "{name}", "{{" and "}}"; conversions, format specs
// and attribute access in fields are refused (InvalidArgument).
absl::StatusOr<Value> BraceFormat(std::string_view format, const CallArgs& args, size_t max_bytes);

// text.replace(old, new[, count]); count < 0 replaces every occurrence. An empty `old` inserts
// `new` between code points, as Python does.
absl::StatusOr<Value> ReplaceText(std::string_view text, std::string_view old_text,
                                  std::string_view new_text, int64_t count, size_t max_bytes);

}  // namespace warmroute::jinja
