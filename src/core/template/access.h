// Attribute, item and slice access as Jinja2's sandboxed environment does it:
//   x.name  - a dict's method (items, keys, values, get) or else its key `name`; a string's or
//             list's method; else Undefined ("'dict object' has no attribute 'name'");
//   x[key]  - a dict's key (falling back to the attribute of that name), a list's or string's
//             element (negative indices count from the end); else Undefined;
//   x[a:b:c] - Python slicing of lists, tuples and strings (strings by code point).
// Methods that would modify a list or dict give an Undefined whose use fails ("access to
// attribute 'append' of 'list' object is unsafe."), as the ImmutableSandboxedEnvironment does.
// Accessing anything on an Undefined is an error (InvalidArgument with its message).
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/template/value.h"

namespace warmroute::jinja {

// The message using the undefined value `v` gives: "'x' is undefined" or its own hint.
std::string UndefinedMessage(const Value& v);

absl::StatusOr<Value> GetAttr(const Value& object, std::string_view name);
// Whether GetAttr(object, name) is a method bound to `object` (`text.startswith`): then calling
// it is CallMethod(object, name, ...), which a call expression does without making the method.
bool IsBoundMethod(const Value& object, std::string_view name);
absl::StatusOr<Value> GetItem(const Value& object, const Value& key);
// object[start:stop:step]; a missing part is nullopt.
absl::StatusOr<Value> GetSlice(const Value& object, std::optional<int64_t> start,
                               std::optional<int64_t> stop, std::optional<int64_t> step);

// The items a for loop (or a filter) iterates: a list's or tuple's items, a dict's keys, a
// string's code points; nothing for Undefined. InvalidArgument for other values ("'int' object
// is not iterable").
absl::StatusOr<std::vector<Value>> Iterate(const Value& v);

}  // namespace warmroute::jinja
