// Names of the builtins, their arguments, and the global functions.
#include "core/template/builtins.h"

#include <ctime>

#include "core/template/cat.h"

namespace warmroute::jinja {
namespace {

struct FilterName {
  std::string_view name;
  FilterId id;
};
constexpr FilterName kFilters[] = {
    {"abs", FilterId::kAbs},         {"capitalize", FilterId::kCapitalize},
    {"count", FilterId::kLength},    {"d", FilterId::kDefault},
    {"default", FilterId::kDefault}, {"first", FilterId::kFirst},
    {"float", FilterId::kFloat},     {"format", FilterId::kFormat},
    {"int", FilterId::kInt},         {"items", FilterId::kItems},
    {"join", FilterId::kJoin},       {"last", FilterId::kLast},
    {"length", FilterId::kLength},   {"list", FilterId::kList},
    {"lower", FilterId::kLower},     {"map", FilterId::kMap},
    {"max", FilterId::kMax},         {"min", FilterId::kMin},
    {"reject", FilterId::kReject},   {"rejectattr", FilterId::kRejectAttr},
    {"replace", FilterId::kReplace}, {"reverse", FilterId::kReverse},
    {"round", FilterId::kRound},     {"safe", FilterId::kSafe},
    {"select", FilterId::kSelect},   {"selectattr", FilterId::kSelectAttr},
    {"sort", FilterId::kSort},       {"string", FilterId::kString},
    {"sum", FilterId::kSum},         {"title", FilterId::kTitle},
    {"tojson", FilterId::kToJson},   {"trim", FilterId::kTrim},
    {"unique", FilterId::kUnique},   {"upper", FilterId::kUpper},
};

struct TestName {
  std::string_view name;
  TestId id;
};
constexpr TestName kTests[] = {
    {"boolean", TestId::kBoolean},
    {"callable", TestId::kCallable},
    {"defined", TestId::kDefined},
    {"divisibleby", TestId::kDivisibleBy},
    {"eq", TestId::kEq},
    {"equalto", TestId::kEq},
    {"==", TestId::kEq},
    {"even", TestId::kEven},
    {"false", TestId::kFalse},
    {"float", TestId::kFloat},
    {"ge", TestId::kGe},
    {">=", TestId::kGe},
    {"greaterthan", TestId::kGt},
    {"gt", TestId::kGt},
    {">", TestId::kGt},
    {"in", TestId::kIn},
    {"integer", TestId::kInteger},
    {"iterable", TestId::kIterable},
    {"le", TestId::kLe},
    {"<=", TestId::kLe},
    {"lessthan", TestId::kLt},
    {"lt", TestId::kLt},
    {"<", TestId::kLt},
    {"lower", TestId::kLower},
    {"mapping", TestId::kMapping},
    {"ne", TestId::kNe},
    {"!=", TestId::kNe},
    {"none", TestId::kNone},
    {"number", TestId::kNumber},
    {"odd", TestId::kOdd},
    {"sameas", TestId::kSameAs},
    {"sequence", TestId::kSequence},
    {"string", TestId::kString},
    {"true", TestId::kTrue},
    {"undefined", TestId::kUndefined},
    {"upper", TestId::kUpper},
};

constexpr std::string_view kMethods[] = {
    "startswith", "endswith",   "split",      "rsplit",  "strip",   "lstrip",  "rstrip",  "lower",
    "upper",      "title",      "capitalize", "replace", "format",  "find",    "rfind",   "count",
    "join",       "splitlines", "isdigit",    "isalpha", "isalnum", "isspace", "islower", "isupper",
    "keys",       "values",     "items",      "get",     "index",
};

constexpr std::string_view kMutating[] = {
    "append", "extend",  "insert", "pop",        "remove",  "clear",
    "sort",   "reverse", "update", "setdefault", "popitem",
};

constexpr std::string_view kGlobals[] = {"range", "namespace", "dict", "raise_exception",
                                         "strftime_now"};

// The sandbox's bound on range() (jinja2.sandbox.MAX_RANGE).
constexpr int64_t kMaxRange = 100000;

}  // namespace

std::optional<FilterId> FindFilter(std::string_view name) {
  for (const FilterName& f : kFilters) {
    if (f.name == name) return f.id;
  }
  return std::nullopt;
}

std::optional<TestId> FindTest(std::string_view name) {
  for (const TestName& t : kTests) {
    if (t.name == name) return t.id;
  }
  return std::nullopt;
}

bool IsKnownMethod(std::string_view name) {
  for (std::string_view m : kMethods) {
    if (m == name) return true;
  }
  return false;
}

bool IsMutatingMethod(std::string_view name) {
  for (std::string_view m : kMutating) {
    if (m == name) return true;
  }
  return false;
}

bool IsGlobalFunction(std::string_view name) {
  for (std::string_view g : kGlobals) {
    if (g == name) return true;
  }
  return false;
}

const Value* GlobalFunction(std::string_view name) {
  // One value per global, as kGlobals orders them: a lookup of `namespace` in a render costs no
  // allocation.
  static const std::vector<Value>* const kValues = [] {
    auto* values = new std::vector<Value>();
    for (std::string_view g : kGlobals) {
      auto c = std::make_shared<Callable>();
      c->type = Callable::Type::kGlobal;
      c->name = std::string(g);
      values->push_back(Value::MakeCallable(std::move(c)));
    }
    return values;
  }();
  for (size_t i = 0; i < std::size(kGlobals); ++i) {
    if (kGlobals[i] == name) return &(*kValues)[i];
  }
  return nullptr;
}

const Value* CallArgs::Get(size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [key, value] : keyword) {
    if (key == name) return &value;
  }
  return nullptr;
}

absl::StatusOr<Value> CallGlobal(std::string_view name, const CallArgs& args,
                                 const BuiltinEnv& env) {
  if (name == "range") {
    int64_t start = 0, stop = 0, step = 1;
    for (const Value& v : args.positional) {
      if (!v.is_int() && !v.is_bool()) {
        return absl::InvalidArgumentError(
            Cat("'", TypeName(v), "' object cannot be interpreted as an integer"));
      }
    }
    const auto& p = args.positional;
    if (p.size() == 1) {
      stop = p[0].AsInt();
    } else if (p.size() == 2 || p.size() == 3) {
      start = p[0].AsInt();
      stop = p[1].AsInt();
      if (p.size() == 3) step = p[2].AsInt();
    } else {
      return absl::InvalidArgumentError("range expected 1 to 3 arguments");
    }
    if (step == 0) return absl::InvalidArgumentError("range() arg 3 must not be zero");
    // In 128 bits: the bounds may be any 64-bit integers.
    const __int128 span = static_cast<__int128>(stop) - start;
    const __int128 step128 = step;
    const __int128 count128 = step > 0 ? (span > 0 ? (span + step128 - 1) / step128 : 0)
                                       : (span < 0 ? (-span - step128 - 1) / -step128 : 0);
    const int64_t count = count128 > kMaxRange ? kMaxRange + 1 : static_cast<int64_t>(count128);
    if (count > kMaxRange) {
      return absl::InvalidArgumentError(
          "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    }
    std::vector<Value> items;
    for (int64_t i = 0; i < count; ++i) items.push_back(Value::Int(start + i * step));
    return Value::MakeList(std::move(items));
  }
  if (name == "namespace" || name == "dict") {
    auto dict = std::make_shared<Dict>(name == "namespace");
    for (const Value& v : args.positional) {
      if (!v.is_dict()) {
        return absl::InvalidArgumentError(Cat(name, "() takes a mapping"));
      }
      for (const auto& [key, value] : v.dict().entries()) dict->Set(key, value);
    }
    for (const auto& [key, value] : args.keyword) dict->Set(key, value);
    return Value::MakeDict(std::move(dict));
  }
  if (name == "strftime_now") {
    const Value* format = args.Get(0, "format");
    if (format == nullptr || !format->is_string()) {
      return absl::InvalidArgumentError("strftime_now() takes a format string");
    }
    if (!env.has_clock) return absl::FailedPreconditionError("strftime_now(): no clock was given");
    const absl::CivilSecond t = absl::ToCivilSecond(absl::FromChrono(env.now), env.time_zone);
    std::tm tm{};
    tm.tm_year = static_cast<int>(t.year() - 1900);
    tm.tm_mon = t.month() - 1;
    tm.tm_mday = t.day();
    tm.tm_hour = t.hour();
    tm.tm_min = t.minute();
    tm.tm_sec = t.second();
    // absl counts weekdays from Monday (0), struct tm from Sunday (0).
    tm.tm_wday = (static_cast<int>(absl::GetWeekday(absl::CivilDay(t))) + 1) % 7;
    tm.tm_yday = absl::GetYearDay(absl::CivilDay(t)) - 1;
    std::string out(format->string_value().size() * 8 + 64, '\0');
    const size_t n = std::strftime(out.data(), out.size(), format->string_value().c_str(), &tm);
    if (n == 0 && !format->string_value().empty()) {
      return absl::InvalidArgumentError("strftime_now(): the formatted date is too long");
    }
    out.resize(n);
    return Value::String(std::move(out));
  }
  return absl::InvalidArgumentError(Cat("unsupported function '", name, "'"));
}

}  // namespace warmroute::jinja
