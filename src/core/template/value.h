// The values a template computes with, modelled on the Python objects Jinja2 hands a chat
// template: Undefined (a missing variable, key or attribute; prints as "" and is false), None,
// bool, int (64 bits here), float, str (UTF-8; indexed by code point), list and tuple, dict
// (insertion-ordered, string keys), namespace objects, and callables (macros, the globals and the
// bound methods of strings and dicts).
//
// Lists, tuples and dicts are shared and never modified once built, as in transformers'
// ImmutableSandboxedEnvironment; a namespace is the one mutable object (`set ns.x = ...`), and
// a for loop's `loop` the one the renderer updates (one per loop, as Jinja2's LoopContext).
//
// Usage:
//   Value v = Value::String("hi");
//   if (Truthy(v)) out += ToStr(v);
//
// Thread-safety: a Value may be read from several threads; a namespace's owner renders alone.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace warmroute::jinja {

struct List;
class Dict;
struct Callable;

class Value {
 public:
  enum class Kind : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,  // a list or a tuple
    kDict,  // a dict or a namespace
    kCallable,
  };

  Value() = default;  // Undefined
  // An undefined value; `hint` names what was missing, for error messages ("'x' is undefined").
  static Value Undefined(std::string hint);
  static Value None();
  static Value Bool(bool b);
  static Value Int(int64_t i);
  static Value Float(double f);
  static Value String(std::string s);
  // A string that refers to `s` instead of copying it. REQUIRES: `s` outlives the value and
  // every copy of it (a render's variables made from a request that outlives the render).
  static Value BorrowedString(const std::string& s);
  static Value MakeList(std::vector<Value> items, bool tuple = false);
  static Value MakeDict(std::shared_ptr<Dict> dict);
  static Value MakeCallable(std::shared_ptr<const Callable> callable);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  // int, float or bool (Python's numbers.Number: bool is an int).
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_tuple() const;
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const;
  bool is_callable() const { return kind_ == Kind::kCallable; }

  // REQUIRES: the matching kind.
  bool bool_value() const { return scalar_.b; }
  int64_t int_value() const { return scalar_.i; }
  double float_value() const { return scalar_.f; }
  // int or bool as an integer. REQUIRES: is_int() || is_bool().
  int64_t AsInt() const { return is_bool() ? scalar_.b : scalar_.i; }
  // Any number as a double. REQUIRES: is_number().
  double AsDouble() const;
  const std::string& string_value() const;
  const List& list() const;
  const std::vector<Value>& items() const;  // list()'s items
  const Dict& dict() const;
  Dict& mutable_dict() const;  // REQUIRES: is_namespace()
  const Callable& callable() const;
  // What an undefined value stands for ("" when unknown).
  const std::string& undefined_hint() const;

 private:
  Kind kind_ = Kind::kUndefined;
  union {
    bool b;
    int64_t i;
    double f;
  } scalar_{};
  std::shared_ptr<void> ptr_;  // std::string, List, Dict or Callable (also an undefined's hint)
};

struct List {
  std::vector<Value> items;
  bool tuple = false;
};

// A dict with string keys in insertion order, or a namespace (the same, mutable by `set`).
class Dict {
 public:
  explicit Dict(bool is_namespace = false) : is_namespace_(is_namespace) {}
  bool is_namespace() const { return is_namespace_; }
  // The value of `key`, or nullptr.
  const Value* Find(std::string_view key) const;
  // Sets `key`, keeping its place when it is already there.
  void Set(std::string key, Value value);
  // Appends `key`: Set without the search. REQUIRES: `key` is not there.
  void Add(std::string key, Value value) {
    entries_.emplace_back(std::move(key), std::move(value));
  }
  void Reserve(size_t entries) { entries_.reserve(entries); }
  // Sets the value of the index-th entry. REQUIRES: index < size().
  void SetAt(size_t index, Value value) { entries_[index].second = std::move(value); }
  const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }

 private:
  bool is_namespace_;
  std::vector<std::pair<std::string, Value>> entries_;
};

// Something a template can call: a macro (defined by the template), a global function, or a
// method bound to its receiver (`text.strip`).
struct Callable {
  enum class Type : uint8_t { kMacro, kGlobal, kMethod };
  Type type = Type::kGlobal;
  std::string name;
  const void* macro = nullptr;  // kMacro: the template's definition (ast.h MacroDef)
  Value receiver;               // kMethod
};

// Python truthiness: Undefined, None, False, 0, 0.0, "" and empty containers are false.
bool Truthy(const Value& v);
// Python ==: numbers by value (1 == 1.0 == True), containers element by element (dicts ignore
// order), Undefined equals only Undefined, callables by identity.
bool Equals(const Value& a, const Value& b);
// Python's ordering (<): -1, 0 or 1 for numbers, strings (by code point), lists and tuples of
// comparable items; InvalidArgument for other pairs ("'<' not supported between instances of
// 'int' and 'str'").
absl::StatusOr<int> Compare(const Value& a, const Value& b, std::string_view op);
// str(v) as Jinja prints it: Undefined as "", None as "None", True, 1.0, ['a', 1], {'k': 'v'}.
std::string ToStr(const Value& v);
// repr(v): strings quoted.
std::string Repr(const Value& v);
// Python's name of v's type, for error messages: "int", "str", "list", "dict", "NoneType", ...
std::string_view TypeName(const Value& v);

}  // namespace warmroute::jinja
