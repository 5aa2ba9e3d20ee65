#include "core/template/value.h"

#include "core/template/cat.h"
#include "core/template/py_text.h"

namespace warmroute::jinja {
namespace {

const std::string& EmptyString() {
  static const std::string* const kEmpty = new std::string();
  return *kEmpty;
}

void AppendRepr(const Value& v, std::string& out);

void AppendSequence(const List& list, std::string& out) {
  out.push_back(list.tuple ? '(' : '[');
  for (size_t i = 0; i < list.items.size(); ++i) {
    if (i > 0) out.append(", ");
    AppendRepr(list.items[i], out);
  }
  if (list.tuple && list.items.size() == 1) out.push_back(',');
  out.push_back(list.tuple ? ')' : ']');
}

void AppendDict(const Dict& dict, std::string& out) {
  out.push_back('{');
  bool first = true;
  for (const auto& [key, value] : dict.entries()) {
    if (!first) out.append(", ");
    first = false;
    out.append(PythonStringRepr(key));
    out.append(": ");
    AppendRepr(value, out);
  }
  out.push_back('}');
}

void AppendStr(const Value& v, std::string& out) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return;
    case Value::Kind::kNone:
      out.append("None");
      return;
    case Value::Kind::kBool:
      out.append(v.bool_value() ? "True" : "False");
      return;
    case Value::Kind::kInt:
      out += Cat(v.int_value());
      return;
    case Value::Kind::kFloat:
      out.append(PythonFloatRepr(v.float_value()));
      return;
    case Value::Kind::kString:
      out.append(v.string_value());
      return;
    case Value::Kind::kList:
      AppendSequence(v.list(), out);
      return;
    case Value::Kind::kDict:
      if (v.is_namespace()) out.append("<Namespace ");
      AppendDict(v.dict(), out);
      if (v.is_namespace()) out.push_back('>');
      return;
    case Value::Kind::kCallable: {
      const Callable& c = v.callable();
      if (c.type == Callable::Type::kMacro) {
        out += Cat("<Macro '", c.name, "'>");
      } else if (c.type == Callable::Type::kMethod) {
        out += Cat("<built-in method ", c.name, " of ", TypeName(c.receiver), " object>");
      } else {
        out += Cat("<function ", c.name, ">");
      }
      return;
    }
  }
}

void AppendRepr(const Value& v, std::string& out) {
  if (v.is_string()) {
    out.append(PythonStringRepr(v.string_value()));
  } else if (v.is_undefined()) {
    out.append("Undefined");
  } else {
    AppendStr(v, out);
  }
}

int Sign(double d) { return d < 0 ? -1 : (d > 0 ? 1 : 0); }

}  // namespace

Value Value::Undefined(std::string hint) {
  Value v;
  if (!hint.empty()) v.ptr_ = std::make_shared<std::string>(std::move(hint));
  return v;
}

Value Value::None() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::Bool(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.scalar_.b = b;
  return v;
}

Value Value::Int(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.scalar_.i = i;
  return v;
}

Value Value::Float(double f) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.scalar_.f = f;
  return v;
}

Value Value::String(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.ptr_ = std::make_shared<std::string>(std::move(s));
  return v;
}

Value Value::BorrowedString(const std::string& s) {
  Value v;
  v.kind_ = Kind::kString;
  // The aliasing constructor with no owner: a pointer to `s` that frees nothing.
  v.ptr_ = std::shared_ptr<void>(std::shared_ptr<void>(), const_cast<std::string*>(&s));
  return v;
}

Value Value::MakeList(std::vector<Value> items, bool tuple) {
  Value v;
  v.kind_ = Kind::kList;
  auto list = std::make_shared<List>();
  list->items = std::move(items);
  list->tuple = tuple;
  v.ptr_ = std::move(list);
  return v;
}

Value Value::MakeDict(std::shared_ptr<Dict> dict) {
  Value v;
  v.kind_ = Kind::kDict;
  v.ptr_ = std::move(dict);
  return v;
}

Value Value::MakeCallable(std::shared_ptr<const Callable> callable) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.ptr_ = std::const_pointer_cast<Callable>(std::move(callable));
  return v;
}

bool Value::is_tuple() const { return is_list() && list().tuple; }
bool Value::is_namespace() const { return is_dict() && dict().is_namespace(); }

double Value::AsDouble() const {
  if (is_float()) return scalar_.f;
  return static_cast<double>(AsInt());
}

const std::string& Value::string_value() const {
  return *static_cast<const std::string*>(ptr_.get());
}
const List& Value::list() const { return *static_cast<const List*>(ptr_.get()); }
const std::vector<Value>& Value::items() const { return list().items; }
const Dict& Value::dict() const { return *static_cast<const Dict*>(ptr_.get()); }
Dict& Value::mutable_dict() const { return *static_cast<Dict*>(ptr_.get()); }
const Callable& Value::callable() const { return *static_cast<const Callable*>(ptr_.get()); }
const std::string& Value::undefined_hint() const {
  return ptr_ ? *static_cast<const std::string*>(ptr_.get()) : EmptyString();
}

const Value* Dict::Find(std::string_view key) const {
  for (const auto& entry : entries_) {
    if (entry.first == key) return &entry.second;
  }
  return nullptr;
}

void Dict::Set(std::string key, Value value) {
  for (auto& entry : entries_) {
    if (entry.first == key) {
      entry.second = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

bool Truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return false;
    case Value::Kind::kBool:
      return v.bool_value();
    case Value::Kind::kInt:
      return v.int_value() != 0;
    case Value::Kind::kFloat:
      return v.float_value() != 0.0;
    case Value::Kind::kString:
      return !v.string_value().empty();
    case Value::Kind::kList:
      return !v.items().empty();
    case Value::Kind::kDict:
      return v.is_namespace() || v.dict().size() > 0;
    case Value::Kind::kCallable:
      return true;
  }
  return false;
}

bool Equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.AsDouble() == b.AsDouble();
    return a.AsInt() == b.AsInt();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.string_value() == b.string_value();
    case Value::Kind::kList: {
      if (a.is_tuple() != b.is_tuple() || a.items().size() != b.items().size()) return false;
      for (size_t i = 0; i < a.items().size(); ++i) {
        if (!Equals(a.items()[i], b.items()[i])) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      if (a.is_namespace() || b.is_namespace()) return &a.dict() == &b.dict();
      if (a.dict().size() != b.dict().size()) return false;
      for (const auto& [key, value] : a.dict().entries()) {
        const Value* other = b.dict().Find(key);
        if (other == nullptr || !Equals(value, *other)) return false;
      }
      return true;
    }
    case Value::Kind::kCallable:
      return &a.callable() == &b.callable();
    default:
      return false;
  }
}

absl::StatusOr<int> Compare(const Value& a, const Value& b, std::string_view op) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return Sign(a.AsDouble() - b.AsDouble());
    return a.AsInt() < b.AsInt() ? -1 : (a.AsInt() > b.AsInt() ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.string_value().compare(b.string_value());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (Equals(x[i], y[i])) continue;
      return Compare(x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  return absl::InvalidArgumentError(Cat("'", op, "' not supported between instances of '",
                                        TypeName(a), "' and '", TypeName(b), "'"));
}

std::string ToStr(const Value& v) {
  if (v.is_string()) return v.string_value();
  std::string out;
  AppendStr(v, out);
  return out;
}

std::string Repr(const Value& v) {
  std::string out;
  AppendRepr(v, out);
  return out;
}

std::string_view TypeName(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kNone:
      return "NoneType";
    case Value::Kind::kBool:
      return "bool";
    case Value::Kind::kInt:
      return "int";
    case Value::Kind::kFloat:
      return "float";
    case Value::Kind::kString:
      return "str";
    case Value::Kind::kList:
      return v.is_tuple() ? "tuple" : "list";
    case Value::Kind::kDict:
      return v.is_namespace() ? "Namespace" : "dict";
    case Value::Kind::kCallable:
      return v.callable().type == Callable::Type::kMacro ? "Macro" : "builtin_function_or_method";
  }
  return "object";
}

}  // namespace warmroute::jinja
