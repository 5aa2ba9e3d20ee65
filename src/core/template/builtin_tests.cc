// The tests ("x is defined", builtins.h), with Jinja2 3.1's behaviour.
#include "common/status.h"
#include "core/template/builtins.h"
#include "core/template/cat.h"

namespace warmroute::jinja {
namespace {

absl::StatusOr<const Value*> Arg(const CallArgs& args, std::string_view test) {
  const Value* v = args.Get(0, "other");
  if (v == nullptr) v = args.Get(0, "value");
  if (v == nullptr) {
    return absl::InvalidArgumentError(Cat("the '", test, "' test needs an argument"));
  }
  return v;
}

absl::StatusOr<int> Ordering(const Value& a, const Value& b, std::string_view op) {
  if (a.is_undefined() || b.is_undefined()) {
    return absl::InvalidArgumentError("an undefined value cannot be compared");
  }
  return Compare(a, b, op);
}

bool SameAs(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kBool:
      return a.bool_value() == b.bool_value();
    case Value::Kind::kInt:
      // CPython caches small ints: `1 is 1` holds.
      return a.int_value() == b.int_value() && a.int_value() >= -5 && a.int_value() <= 256;
    case Value::Kind::kString:
      return &a.string_value() == &b.string_value();
    case Value::Kind::kList:
      return &a.list() == &b.list();
    case Value::Kind::kDict:
      return &a.dict() == &b.dict();
    case Value::Kind::kCallable:
      return &a.callable() == &b.callable();
    default:
      return false;
  }
}

}  // namespace

absl::StatusOr<bool> ApplyTest(TestId id, const Value& v, const CallArgs& args) {
  switch (id) {
    case TestId::kDefined:
      return !v.is_undefined();
    case TestId::kUndefined:
      return v.is_undefined();
    case TestId::kNone:
      return v.is_none();
    case TestId::kBoolean:
      return v.is_bool();
    case TestId::kTrue:
      return v.is_bool() && v.bool_value();
    case TestId::kFalse:
      return v.is_bool() && !v.bool_value();
    case TestId::kInteger:
      return v.is_int();
    case TestId::kFloat:
      return v.is_float();
    case TestId::kNumber:
      return v.is_number();
    case TestId::kString:
      return v.is_string();
    case TestId::kMapping:
      return v.is_dict() && !v.is_namespace();
    case TestId::kIterable:
      return v.is_list() || v.is_string() || (v.is_dict() && !v.is_namespace()) || v.is_undefined();
    case TestId::kSequence:
      return v.is_list() || v.is_string() || (v.is_dict() && !v.is_namespace()) || v.is_undefined();
    case TestId::kCallable:
      return v.is_callable();
    case TestId::kLower:
    case TestId::kUpper: {
      // str.islower(): some cased character, none of the other case.
      const std::string s = ToStr(v);
      bool lower = false, upper = false;
      for (char c : s) {
        lower |= c >= 'a' && c <= 'z';
        upper |= c >= 'A' && c <= 'Z';
      }
      return id == TestId::kLower ? lower && !upper : upper && !lower;
    }
    case TestId::kOdd:
    case TestId::kEven:
      if (!v.is_int() && !v.is_bool()) {
        return absl::InvalidArgumentError("odd/even need an integer");
      }
      return (v.AsInt() % 2 != 0) == (id == TestId::kOdd);
    case TestId::kDivisibleBy: {
      WR_ASSIGN_OR_RETURN(const Value* n, Arg(args, "divisibleby"));
      if (!(v.is_int() || v.is_bool()) || !(n->is_int() || n->is_bool()) || n->AsInt() == 0) {
        return absl::InvalidArgumentError("divisibleby needs nonzero integers");
      }
      return v.AsInt() % n->AsInt() == 0;
    }
    case TestId::kEq: {
      WR_ASSIGN_OR_RETURN(const Value* other, Arg(args, "eq"));
      return Equals(v, *other);
    }
    case TestId::kNe: {
      WR_ASSIGN_OR_RETURN(const Value* other, Arg(args, "ne"));
      return !Equals(v, *other);
    }
    case TestId::kLt:
    case TestId::kLe:
    case TestId::kGt:
    case TestId::kGe: {
      WR_ASSIGN_OR_RETURN(const Value* other, Arg(args, "comparison"));
      static constexpr const char* kOps[] = {"<", "<=", ">", ">="};
      const int index = id == TestId::kLt ? 0 : id == TestId::kLe ? 1 : id == TestId::kGt ? 2 : 3;
      WR_ASSIGN_OR_RETURN(int c, Ordering(v, *other, kOps[index]));
      return index == 0 ? c < 0 : index == 1 ? c <= 0 : index == 2 ? c > 0 : c >= 0;
    }
    case TestId::kIn: {
      WR_ASSIGN_OR_RETURN(const Value* seq, Arg(args, "in"));
      if (seq->is_string()) {
        if (!v.is_string()) {
          return absl::InvalidArgumentError("'in <string>' requires string as left operand");
        }
        return seq->string_value().find(v.string_value()) != std::string::npos;
      }
      if (seq->is_list()) {
        for (const Value& item : seq->items()) {
          if (Equals(item, v)) return true;
        }
        return false;
      }
      if (seq->is_dict() && !seq->is_namespace()) {
        return v.is_string() && seq->dict().Find(v.string_value()) != nullptr;
      }
      if (seq->is_undefined()) return false;
      return absl::InvalidArgumentError(
          Cat("argument of type '", TypeName(*seq), "' is not iterable"));
    }
    case TestId::kSameAs: {
      WR_ASSIGN_OR_RETURN(const Value* other, Arg(args, "sameas"));
      return SameAs(v, *other);
    }
  }
  return absl::InternalError("unknown test");
}

}  // namespace warmroute::jinja
