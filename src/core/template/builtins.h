// The filters, tests, methods and globals templates may use, as Jinja2 3.1 defines them in
// transformers' environment (its `tojson` = json.dumps(ensure_ascii=False), raise_exception,
// strftime_now; an ImmutableSandboxedEnvironment, so the methods that modify a list or dict are
// refused). A name not listed here is refused when the template is parsed.
//
//   filters  abs capitalize count d default first float format int items join last length list
//            lower map max min reject rejectattr replace reverse round safe select selectattr sort
//            string sum title tojson trim unique upper
//   tests    boolean callable defined divisibleby eq equalto even false float ge greaterthan gt
//            in integer iterable le lessthan lower lt mapping ne none number odd sameas sequence
//            string true undefined upper == != < <= > >=
//   methods  str: startswith endswith split rsplit strip lstrip rstrip lower upper title
//            capitalize replace format find rfind count join splitlines isdigit isalpha isalnum
//            isspace islower isupper; dict: keys values items get; list: index count
//   globals  range namespace dict raise_exception strftime_now
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/template/value.h"

namespace warmroute::jinja {

enum class FilterId {
  kAbs,
  kCapitalize,
  kDefault,
  kFirst,
  kFloat,
  kFormat,
  kInt,
  kItems,
  kJoin,
  kLast,
  kLength,
  kList,
  kLower,
  kMap,
  kMax,
  kMin,
  kReject,
  kRejectAttr,
  kReplace,
  kReverse,
  kRound,
  kSafe,
  kSelect,
  kSelectAttr,
  kSort,
  kString,
  kSum,
  kTitle,
  kToJson,
  kTrim,
  kUnique,
  kUpper,
};

enum class TestId {
  kBoolean,
  kCallable,
  kDefined,
  kDivisibleBy,
  kEq,
  kEven,
  kFalse,
  kFloat,
  kGe,
  kGt,
  kIn,
  kInteger,
  kIterable,
  kLe,
  kLower,
  kLt,
  kMapping,
  kNe,
  kNone,
  kNumber,
  kOdd,
  kSameAs,
  kSequence,
  kString,
  kTrue,
  kUndefined,
  kUpper,
};

std::optional<FilterId> FindFilter(std::string_view name);
std::optional<TestId> FindTest(std::string_view name);
// Whether `name` is a method of str, dict or list that templates may call.
bool IsKnownMethod(std::string_view name);
// Whether a list or dict method of this name modifies its object (refused by the sandbox).
bool IsMutatingMethod(std::string_view name);
// Whether `name` is one of the globals above.
bool IsGlobalFunction(std::string_view name);
// The callable value of the global `name` (made once, shared by every render), or nullptr.
const Value* GlobalFunction(std::string_view name);

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument at `index` or named `name`, or nullptr.
  const Value* Get(size_t index, std::string_view name) const;
};

// What filters and globals need from the render: bounds, the date, and nesting for tojson.
struct BuiltinEnv {
  size_t max_string_bytes = 0;  // no string a filter or method builds may be longer
  int max_depth = 0;            // tojson's nesting bound
  bool has_clock = false;       // strftime_now fails without one
  std::chrono::system_clock::time_point now;
  absl::TimeZone time_zone;
};

absl::StatusOr<Value> ApplyFilter(FilterId id, const Value& operand, const CallArgs& args,
                                  const BuiltinEnv& env);
absl::StatusOr<bool> ApplyTest(TestId id, const Value& operand, const CallArgs& args);
// receiver.name(args): a method of a str, dict or list. InvalidArgument when there is none.
absl::StatusOr<Value> CallMethod(const Value& receiver, std::string_view name, const CallArgs& args,
                                 const BuiltinEnv& env);
// A global function other than raise_exception (the renderer's) called with `args`.
absl::StatusOr<Value> CallGlobal(std::string_view name, const CallArgs& args,
                                 const BuiltinEnv& env);

// The message of a missing attribute or item, as Jinja words it: "'dict object' has no
// attribute 'x'".
std::string NoAttributeMessage(const Value& object, std::string_view name);

}  // namespace warmroute::jinja
