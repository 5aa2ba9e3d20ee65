// The filters (builtins.h), with Jinja2 3.1's behaviour and transformers' tojson.
#include <algorithm>
#include <cmath>

#include "common/status.h"
#include "core/template/access.h"
#include "core/template/builtins.h"
#include "core/template/cat.h"
#include "core/template/json_value.h"
#include "core/template/py_text.h"
#include "core/template/string_format.h"

namespace warmroute::jinja {
namespace {

absl::Status TooLong() { return absl::ResourceExhaustedError("a string exceeds the output limit"); }

// Jinja's make_attribute_getter: "a.b.0" looks up a, then b, then item 0.
absl::StatusOr<Value> GetPath(const Value& item, std::string_view path) {
  Value v = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string_view part = path.substr(start, dot - start);
    Value key = Value::String(std::string(part));
    if (!part.empty() &&
        std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      key = Value::Int(std::stoll(std::string(part)));
    }
    WR_ASSIGN_OR_RETURN(v, GetItem(v, key));
    if (dot == std::string_view::npos) return v;
    start = dot + 1;
  }
}

absl::StatusOr<std::vector<Value>> Items(const Value& v) { return Iterate(v); }

// select / reject / selectattr / rejectattr.
absl::StatusOr<Value> Select(const Value& operand, const CallArgs& args, bool by_attribute,
                             bool keep) {
  WR_ASSIGN_OR_RETURN(std::vector<Value> items, Items(operand));
  size_t next = 0;
  std::string attribute;
  if (by_attribute) {
    if (args.positional.empty() || !args.positional[0].is_string()) {
      return absl::InvalidArgumentError("selectattr/rejectattr need an attribute name");
    }
    attribute = args.positional[0].string_value();
    next = 1;
  }
  std::optional<TestId> test;
  CallArgs test_args;
  if (next < args.positional.size()) {
    if (!args.positional[next].is_string()) {
      return absl::InvalidArgumentError("the test name must be a string");
    }
    test = FindTest(args.positional[next].string_value());
    if (!test) {
      return absl::InvalidArgumentError(
          Cat("No test named '", args.positional[next].string_value(), "'"));
    }
    test_args.positional.assign(args.positional.begin() + next + 1, args.positional.end());
  }
  std::vector<Value> out;
  for (Value& item : items) {
    Value subject = item;
    if (by_attribute) {
      WR_ASSIGN_OR_RETURN(subject, GetPath(item, attribute));
    }
    bool pass;
    if (test) {
      WR_ASSIGN_OR_RETURN(pass, ApplyTest(*test, subject, test_args));
    } else {
      pass = Truthy(subject);
    }
    if (pass == keep) out.push_back(std::move(item));
  }
  return Value::MakeList(std::move(out));
}

absl::StatusOr<Value> Map(const Value& operand, const CallArgs& args, const BuiltinEnv& env) {
  WR_ASSIGN_OR_RETURN(std::vector<Value> items, Items(operand));
  std::vector<Value> out;
  const Value* attribute = nullptr;
  const Value* dflt = nullptr;
  for (const auto& [key, value] : args.keyword) {
    if (key == "attribute") attribute = &value;
    if (key == "default") dflt = &value;
  }
  if (attribute != nullptr) {
    for (const Value& item : items) {
      WR_ASSIGN_OR_RETURN(Value v, GetPath(item, ToStr(*attribute)));
      if (v.is_undefined() && dflt != nullptr) v = *dflt;
      out.push_back(std::move(v));
    }
    return Value::MakeList(std::move(out));
  }
  if (args.positional.empty() || !args.positional[0].is_string()) {
    return absl::InvalidArgumentError("map() needs a filter name or attribute=");
  }
  const std::optional<FilterId> filter = FindFilter(args.positional[0].string_value());
  if (!filter) {
    return absl::InvalidArgumentError(
        Cat("No filter named '", args.positional[0].string_value(), "'"));
  }
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  for (const Value& item : items) {
    WR_ASSIGN_OR_RETURN(Value v, ApplyFilter(*filter, item, rest, env));
    out.push_back(std::move(v));
  }
  return Value::MakeList(std::move(out));
}

// sort / min / max / unique: case-insensitive on strings unless case_sensitive.
Value SortKey(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::String(AsciiLower(v.string_value()));
  return v;
}

absl::StatusOr<std::vector<Value>> Sorted(const Value& operand, const CallArgs& args,
                                          size_t attr_index) {
  WR_ASSIGN_OR_RETURN(std::vector<Value> items, Items(operand));
  const Value* cs = nullptr;
  const Value* attr = nullptr;
  for (const auto& [k, v] : args.keyword) {
    if (k == "case_sensitive") cs = &v;
    if (k == "attribute") attr = &v;
  }
  if (attr == nullptr) attr = args.Get(attr_index, "attribute");
  const bool case_sensitive = cs != nullptr && Truthy(*cs);
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& item : items) {
    Value key = item;
    if (attr != nullptr && !attr->is_none()) {
      WR_ASSIGN_OR_RETURN(key, GetPath(item, ToStr(*attr)));
    }
    keyed.emplace_back(SortKey(key, case_sensitive), std::move(item));
  }
  absl::Status error;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    absl::StatusOr<int> c = Compare(a.first, b.first, "<");
    if (!c.ok()) {
      error = c.status();
      return false;
    }
    return *c < 0;
  });
  WR_RETURN_IF_ERROR(error);
  std::vector<Value> out;
  for (auto& [key, item] : keyed) out.push_back(std::move(item));
  return out;
}

std::string Capitalize(std::string_view s) {
  std::string out = AsciiLower(s);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 32);
  return out;
}

// Jinja's title filter: words start after "-", whitespace, "(", "{", "[" or "<".
std::string TitleFilter(std::string_view s) {
  std::string out;
  bool start = true;
  for (char c : s) {
    const bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || c == ' ' ||
                     c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
    if (sep) {
      out.push_back(c);
      start = true;
    } else if (start) {
      out.push_back(c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c);
      start = false;
    } else {
      out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c);
    }
  }
  return out;
}

absl::StatusOr<Value> ToJsonFilter(const Value& operand, const CallArgs& args,
                                   const BuiltinEnv& env) {
  // transformers: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
  JsonOptions options;
  if (const Value* v = args.Get(0, "ensure_ascii")) options.ensure_ascii = Truthy(*v);
  if (const Value* v = args.Get(1, "indent"); v != nullptr && !v->is_none()) {
    if (v->is_string()) return absl::InvalidArgumentError("tojson: unsupported string indent");
    if (!v->is_int()) return absl::InvalidArgumentError("tojson: indent must be an integer");
    options.indent = static_cast<int>(std::clamp<int64_t>(v->int_value(), -1, 64));
  }
  if (const Value* v = args.Get(2, "separators"); v != nullptr && !v->is_none()) {
    if (!v->is_list() || v->items().size() != 2 || !v->items()[0].is_string() ||
        !v->items()[1].is_string()) {
      return absl::InvalidArgumentError("tojson: separators must be two strings");
    }
    options.item_separator = v->items()[0].string_value();
    options.key_separator = v->items()[1].string_value();
  }
  if (const Value* v = args.Get(3, "sort_keys")) options.sort_keys = Truthy(*v);
  WR_ASSIGN_OR_RETURN(std::string text, ToJson(operand, options, env.max_depth));
  if (text.size() > env.max_string_bytes) return TooLong();
  return Value::String(std::move(text));
}

}  // namespace

absl::StatusOr<Value> ApplyFilter(FilterId id, const Value& operand, const CallArgs& args,
                                  const BuiltinEnv& env) {
  switch (id) {
    case FilterId::kAbs:
      if (operand.is_float()) return Value::Float(std::fabs(operand.float_value()));
      if (operand.is_int() || operand.is_bool()) return Value::Int(std::llabs(operand.AsInt()));
      return absl::InvalidArgumentError(
          Cat("bad operand type for abs(): '", TypeName(operand), "'"));
    case FilterId::kCapitalize:
      return Value::String(Capitalize(ToStr(operand)));
    case FilterId::kDefault: {
      const Value* dflt = args.Get(0, "default_value");
      const Value* boolean = args.Get(1, "boolean");
      const bool use_default =
          operand.is_undefined() || (boolean != nullptr && Truthy(*boolean) && !Truthy(operand));
      if (!use_default) return operand;
      return dflt != nullptr ? *dflt : Value::String("");
    }
    case FilterId::kFirst:
    case FilterId::kLast: {
      WR_ASSIGN_OR_RETURN(std::vector<Value> items, Items(operand));
      if (items.empty()) return Value::Undefined("No first item, sequence was empty.");
      return id == FilterId::kFirst ? items.front() : items.back();
    }
    case FilterId::kFloat: {
      const Value* dflt = args.Get(0, "default");
      if (operand.is_number()) return Value::Float(operand.AsDouble());
      if (operand.is_string()) {
        const std::string_view s = StripSpace(operand.string_value(), true, true);
        char* end = nullptr;
        const std::string text(s);
        const double d = std::strtod(text.c_str(), &end);
        if (!text.empty() && end == text.c_str() + text.size()) return Value::Float(d);
      }
      return dflt != nullptr ? *dflt : Value::Float(0.0);
    }
    case FilterId::kFormat:
      return PercentFormat(ToStr(operand), args, env.max_string_bytes);
    case FilterId::kInt: {
      const Value* dflt = args.Get(0, "default");
      if (operand.is_int() || operand.is_bool()) return Value::Int(operand.AsInt());
      if (operand.is_float()) {
        const double d = operand.float_value();
        if (std::isfinite(d) && std::fabs(d) < 9.2e18) return Value::Int(static_cast<int64_t>(d));
      }
      if (operand.is_string()) {
        const std::string text(StripSpace(operand.string_value(), true, true));
        char* end = nullptr;
        errno = 0;
        const long long i = std::strtoll(text.c_str(), &end, 10);
        if (!text.empty() && errno == 0 && end == text.c_str() + text.size()) return Value::Int(i);
        const double d = std::strtod(text.c_str(), &end);
        if (!text.empty() && end == text.c_str() + text.size() && std::isfinite(d) &&
            std::fabs(d) < 9.2e18) {
          return Value::Int(static_cast<int64_t>(d));
        }
      }
      return dflt != nullptr ? *dflt : Value::Int(0);
    }
    case FilterId::kItems: {
      if (operand.is_undefined()) return Value::MakeList({});
      if (!operand.is_dict() || operand.is_namespace()) {
        return absl::InvalidArgumentError("Can only get item pairs from a mapping.");
      }
      std::vector<Value> pairs;
      for (const auto& [key, value] : operand.dict().entries()) {
        pairs.push_back(Value::MakeList({Value::String(key), value}, /*tuple=*/true));
      }
      return Value::MakeList(std::move(pairs));
    }
    case FilterId::kJoin: {
      WR_ASSIGN_OR_RETURN(std::vector<Value> items, Items(operand));
      const Value* sep = args.Get(0, "d");
      const Value* attribute = args.Get(1, "attribute");
      const std::string separator = sep != nullptr ? ToStr(*sep) : "";
      std::string out;
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += separator;
        if (attribute != nullptr && !attribute->is_none()) {
          WR_ASSIGN_OR_RETURN(Value v, GetPath(items[i], ToStr(*attribute)));
          out += ToStr(v);
        } else {
          out += ToStr(items[i]);
        }
        if (out.size() > env.max_string_bytes) return TooLong();
      }
      return Value::String(std::move(out));
    }
    case FilterId::kLength:
      if (operand.is_string()) {
        return Value::Int(static_cast<int64_t>(CodePointCount(operand.string_value())));
      }
      if (operand.is_list()) return Value::Int(static_cast<int64_t>(operand.items().size()));
      if (operand.is_dict() && !operand.is_namespace()) {
        return Value::Int(static_cast<int64_t>(operand.dict().size()));
      }
      if (operand.is_undefined()) return Value::Int(0);
      return absl::InvalidArgumentError(
          Cat("object of type '", TypeName(operand), "' has no len()"));
    case FilterId::kList: {
      WR_ASSIGN_OR_RETURN(std::vector<Value> items, Items(operand));
      return Value::MakeList(std::move(items));
    }
    case FilterId::kLower:
      return Value::String(AsciiLower(ToStr(operand)));
    case FilterId::kUpper:
      return Value::String(AsciiUpper(ToStr(operand)));
    case FilterId::kMap:
      return Map(operand, args, env);
    case FilterId::kMax:
    case FilterId::kMin: {
      WR_ASSIGN_OR_RETURN(std::vector<Value> sorted, Sorted(operand, args, 1));
      if (sorted.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
      return id == FilterId::kMin ? sorted.front() : sorted.back();
    }
    case FilterId::kReject:
      return Select(operand, args, false, false);
    case FilterId::kSelect:
      return Select(operand, args, false, true);
    case FilterId::kRejectAttr:
      return Select(operand, args, true, false);
    case FilterId::kSelectAttr:
      return Select(operand, args, true, true);
    case FilterId::kReplace: {
      const Value* old_text = args.Get(0, "old");
      const Value* new_text = args.Get(1, "new");
      const Value* count = args.Get(2, "count");
      if (old_text == nullptr || new_text == nullptr) {
        return absl::InvalidArgumentError("replace() needs old and new");
      }
      return ReplaceText(ToStr(operand), ToStr(*old_text), ToStr(*new_text),
                         count != nullptr && !count->is_none() ? count->AsInt() : -1,
                         env.max_string_bytes);
    }
    case FilterId::kReverse:
      if (operand.is_string()) {
        std::vector<char32_t> cps = DecodeUtf8(operand.string_value());
        std::reverse(cps.begin(), cps.end());
        return Value::String(EncodeUtf8(cps));
      } else {
        WR_ASSIGN_OR_RETURN(std::vector<Value> items, Items(operand));
        std::reverse(items.begin(), items.end());
        return Value::MakeList(std::move(items));
      }
    case FilterId::kRound: {
      const Value* precision = args.Get(0, "precision");
      const Value* method = args.Get(1, "method");
      if (!operand.is_number()) {
        return absl::InvalidArgumentError("round() needs a number");
      }
      const double scale = std::pow(10.0, precision != nullptr ? precision->AsDouble() : 0.0);
      const std::string how = method != nullptr ? ToStr(*method) : "common";
      double x = operand.AsDouble() * scale;
      if (how == "ceil") {
        x = std::ceil(x);
      } else if (how == "floor") {
        x = std::floor(x);
      } else {
        x = std::nearbyint(x);  // Python rounds halves to even
      }
      return Value::Float(x / scale);
    }
    case FilterId::kSafe:
    case FilterId::kString:
      return Value::String(ToStr(operand));
    case FilterId::kSort: {
      WR_ASSIGN_OR_RETURN(std::vector<Value> sorted, Sorted(operand, args, 2));
      const Value* reverse = args.Get(0, "reverse");
      if (reverse != nullptr && Truthy(*reverse)) std::reverse(sorted.begin(), sorted.end());
      return Value::MakeList(std::move(sorted));
    }
    case FilterId::kSum: {
      WR_ASSIGN_OR_RETURN(std::vector<Value> items, Items(operand));
      const Value* attribute = args.Get(0, "attribute");
      const Value* start = args.Get(1, "start");
      bool is_float = start != nullptr && start->is_float();
      double fsum = start != nullptr ? start->AsDouble() : 0;
      int64_t isum = start != nullptr && !start->is_float() ? start->AsInt() : 0;
      for (const Value& item : items) {
        Value v = item;
        if (attribute != nullptr && !attribute->is_none()) {
          WR_ASSIGN_OR_RETURN(v, GetPath(item, ToStr(*attribute)));
        }
        if (!v.is_number()) return absl::InvalidArgumentError("sum() needs numbers");
        if (v.is_float()) is_float = true;
        fsum += v.AsDouble();
        if (!v.is_float() && __builtin_add_overflow(isum, v.AsInt(), &isum)) {
          return absl::InvalidArgumentError("integer overflow");
        }
      }
      return is_float ? Value::Float(fsum) : Value::Int(isum);
    }
    case FilterId::kTitle:
      return Value::String(TitleFilter(ToStr(operand)));
    case FilterId::kToJson:
      return ToJsonFilter(operand, args, env);
    case FilterId::kTrim: {
      const Value* chars = args.Get(0, "chars");
      if (chars != nullptr && !chars->is_none()) {
        return Value::String(StripChars(ToStr(operand), ToStr(*chars), true, true));
      }
      return Value::String(std::string(StripSpace(ToStr(operand), true, true)));
    }
    case FilterId::kUnique: {
      WR_ASSIGN_OR_RETURN(std::vector<Value> items, Items(operand));
      const Value* cs = args.Get(0, "case_sensitive");
      const bool case_sensitive = cs != nullptr && Truthy(*cs);
      std::vector<Value> out, seen;
      for (Value& item : items) {
        Value key = SortKey(item, case_sensitive);
        bool dup = false;
        for (const Value& s : seen) dup |= Equals(s, key);
        if (dup) continue;
        seen.push_back(std::move(key));
        out.push_back(std::move(item));
      }
      return Value::MakeList(std::move(out));
    }
  }
  return absl::InternalError("unknown filter");
}

}  // namespace warmroute::jinja
