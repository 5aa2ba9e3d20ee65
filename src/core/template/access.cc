#include "core/template/access.h"

#include <algorithm>

#include "core/template/builtins.h"
#include "core/template/cat.h"
#include "core/template/py_text.h"

namespace warmroute::jinja {
namespace {

bool IsDictMethod(std::string_view name) {
  return name == "items" || name == "keys" || name == "values" || name == "get";
}
bool IsStringMethod(std::string_view name) {
  return IsKnownMethod(name) && !IsDictMethod(name) && name != "index";
}
bool IsListMethod(std::string_view name) { return name == "index" || name == "count"; }

Value Method(const Value& receiver, std::string_view name) {
  auto c = std::make_shared<Callable>();
  c->type = Callable::Type::kMethod;
  c->name = std::string(name);
  c->receiver = receiver;
  return Value::MakeCallable(std::move(c));
}

Value Unsafe(const Value& object, std::string_view name) {
  return Value::Undefined(
      Cat("access to attribute '", name, "' of '", TypeName(object), "' object is unsafe."));
}

// Python's normalisation of an index into [0, size), or -1 when outside.
int64_t NormalizeIndex(int64_t index, size_t size) {
  if (index < 0) index += static_cast<int64_t>(size);
  return index < 0 || index >= static_cast<int64_t>(size) ? -1 : index;
}

}  // namespace

std::string NoAttributeMessage(const Value& object, std::string_view name) {
  return Cat("'", TypeName(object), " object' has no attribute '", name, "'");
}

std::string UndefinedMessage(const Value& v) {
  const std::string& hint = v.undefined_hint();
  return hint.empty() ? "undefined value" : hint;
}

absl::StatusOr<Value> GetAttr(const Value& object, std::string_view name) {
  switch (object.kind()) {
    case Value::Kind::kUndefined:
      return absl::InvalidArgumentError(UndefinedMessage(object));
    case Value::Kind::kDict:
      if (object.is_namespace()) break;
      if (IsDictMethod(name)) return Method(object, name);
      if (IsMutatingMethod(name)) return Unsafe(object, name);
      if (const Value* v = object.dict().Find(name)) return *v;
      break;
    case Value::Kind::kString:
      if (IsStringMethod(name)) return Method(object, name);
      break;
    case Value::Kind::kList:
      if (IsListMethod(name)) return Method(object, name);
      if (IsMutatingMethod(name)) return Unsafe(object, name);
      break;
    default:
      break;
  }
  if (object.is_namespace()) {
    if (const Value* v = object.dict().Find(name)) return *v;
  }
  return Value::Undefined(NoAttributeMessage(object, name));
}

bool IsBoundMethod(const Value& object, std::string_view name) {
  switch (object.kind()) {
    case Value::Kind::kDict:
      return !object.is_namespace() && IsDictMethod(name);
    case Value::Kind::kString:
      return IsStringMethod(name);
    case Value::Kind::kList:
      return IsListMethod(name);
    default:
      return false;
  }
}

absl::StatusOr<Value> GetItem(const Value& object, const Value& key) {
  if (object.is_undefined()) return absl::InvalidArgumentError(UndefinedMessage(object));
  if (object.is_dict() && !object.is_namespace() && key.is_string()) {
    if (const Value* v = object.dict().Find(key.string_value())) return *v;
    return GetAttr(object, key.string_value());
  }
  if ((object.is_list() || object.is_string()) && (key.is_int() || key.is_bool())) {
    if (object.is_list()) {
      const int64_t i = NormalizeIndex(key.AsInt(), object.items().size());
      if (i >= 0) return object.items()[i];
    } else {
      const std::vector<char32_t> cps = DecodeUtf8(object.string_value());
      const int64_t i = NormalizeIndex(key.AsInt(), cps.size());
      if (i >= 0) {
        std::string out;
        AppendUtf8(cps[i], out);
        return Value::String(std::move(out));
      }
    }
  }
  if (key.is_string()) return GetAttr(object, key.string_value());
  return Value::Undefined(Cat("'", TypeName(object), " object' has no element ", Repr(key)));
}

absl::StatusOr<Value> GetSlice(const Value& object, std::optional<int64_t> start,
                               std::optional<int64_t> stop, std::optional<int64_t> step_opt) {
  if (object.is_undefined()) return absl::InvalidArgumentError(UndefinedMessage(object));
  // Steps past +-2^62 step past any sequence: clamped so that index arithmetic cannot overflow.
  const int64_t step =
      std::clamp<int64_t>(step_opt.value_or(1), -(int64_t{1} << 62), int64_t{1} << 62);
  if (step == 0) return absl::InvalidArgumentError("slice step cannot be zero");
  std::vector<char32_t> cps;
  size_t size;
  if (object.is_list()) {
    size = object.items().size();
  } else if (object.is_string()) {
    cps = DecodeUtf8(object.string_value());
    size = cps.size();
  } else {
    return absl::InvalidArgumentError(Cat("'", TypeName(object), "' object is not subscriptable"));
  }
  // Python's slice.indices().
  const int64_t n = static_cast<int64_t>(size);
  const auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= n) {
      x = step < 0 ? n - 1 : n;
    }
    return x;
  };
  const int64_t lo = clamp(start, step < 0 ? n - 1 : 0);
  const int64_t hi = clamp(stop, step < 0 ? -1 : n);
  const auto picked = [&](int64_t i) { return step > 0 ? i < hi : i > hi; };
  if (object.is_list()) {
    std::vector<Value> out;
    if (picked(lo)) out.reserve(static_cast<size_t>((hi - lo) / step) + 1);
    for (int64_t i = lo; picked(i); i += step) out.push_back(object.items()[i]);
    return Value::MakeList(std::move(out), object.is_tuple());
  }
  std::string out;
  for (int64_t i = lo; picked(i); i += step) AppendUtf8(cps[i], out);
  return Value::String(std::move(out));
}

absl::StatusOr<std::vector<Value>> Iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return std::vector<Value>();
    case Value::Kind::kList:
      return v.items();
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      if (v.is_namespace()) break;
      for (const auto& entry : v.dict().entries()) keys.push_back(Value::String(entry.first));
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> chars;
      for (char32_t c : DecodeUtf8(v.string_value())) {
        std::string s;
        AppendUtf8(c, s);
        chars.push_back(Value::String(std::move(s)));
      }
      return chars;
    }
    default:
      break;
  }
  return absl::InvalidArgumentError(Cat("'", TypeName(v), "' object is not iterable"));
}

}  // namespace warmroute::jinja
