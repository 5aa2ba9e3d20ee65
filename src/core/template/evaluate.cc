// Renderer's expressions: operators with Python's semantics on template values.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "absl/container/inlined_vector.h"
#include "common/status.h"
#include "core/template/access.h"
#include "core/template/cat.h"
#include "core/template/renderer.h"

namespace warmroute::jinja {
namespace {

absl::Status Unsupported(std::string_view op, const Value& a, const Value& b) {
  return absl::InvalidArgumentError(
      Cat("unsupported operand type(s) for ", op, ": '", TypeName(a), "' and '", TypeName(b), "'"));
}

const char* OpText(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "+";
    case BinaryOp::kSub:
      return "-";
    case BinaryOp::kMul:
      return "*";
    case BinaryOp::kDiv:
      return "/";
    case BinaryOp::kFloorDiv:
      return "//";
    case BinaryOp::kMod:
      return "%";
    case BinaryOp::kPow:
      return "**";
    case BinaryOp::kConcat:
      return "~";
  }
  return "?";
}

absl::StatusOr<Value> Repeat(const Value& seq, int64_t times, size_t max_bytes) {
  const size_t size = seq.is_string() ? seq.string_value().size() : seq.items().size();
  if (times <= 0 || size == 0) {
    return seq.is_string() ? Value::String("") : Value::MakeList({}, seq.is_tuple());
  }
  if (static_cast<uint64_t>(times) > max_bytes / size) {
    return absl::ResourceExhaustedError("a repeated string or list exceeds the output limit");
  }
  if (seq.is_string()) {
    if (size * static_cast<uint64_t>(times) > max_bytes) {
      return absl::ResourceExhaustedError("a repeated string exceeds the output limit");
    }
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += seq.string_value();
    return Value::String(std::move(out));
  }
  if (seq.items().size() * static_cast<uint64_t>(times) > max_bytes) {
    return absl::ResourceExhaustedError("a repeated list exceeds the output limit");
  }
  std::vector<Value> out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
  return Value::MakeList(std::move(out), seq.is_tuple());
}

absl::StatusOr<Value> Arithmetic(BinaryOp op, const Value& a, const Value& b, size_t max_bytes) {
  if (a.is_undefined()) return absl::InvalidArgumentError(UndefinedMessage(a));
  if (b.is_undefined()) return absl::InvalidArgumentError(UndefinedMessage(b));
  const bool ints = (a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool());
  const bool numbers = a.is_number() && b.is_number();
  const auto overflow = [] { return absl::InvalidArgumentError("integer overflow"); };
  switch (op) {
    case BinaryOp::kAdd:
      if (ints) {
        int64_t r;
        if (__builtin_add_overflow(a.AsInt(), b.AsInt(), &r)) return overflow();
        return Value::Int(r);
      }
      if (numbers) return Value::Float(a.AsDouble() + b.AsDouble());
      if (a.is_string() && b.is_string()) {
        if (a.string_value().size() + b.string_value().size() > max_bytes) {
          return absl::ResourceExhaustedError("a string exceeds the output limit");
        }
        return Value::String(a.string_value() + b.string_value());
      }
      if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        std::vector<Value> items = a.items();
        items.insert(items.end(), b.items().begin(), b.items().end());
        return Value::MakeList(std::move(items), a.is_tuple());
      }
      if (a.is_string()) {
        return absl::InvalidArgumentError(
            Cat("can only concatenate str (not \"", TypeName(b), "\") to str"));
      }
      return Unsupported("+", a, b);
    case BinaryOp::kSub:
      if (ints) {
        int64_t r;
        if (__builtin_sub_overflow(a.AsInt(), b.AsInt(), &r)) return overflow();
        return Value::Int(r);
      }
      if (numbers) return Value::Float(a.AsDouble() - b.AsDouble());
      return Unsupported("-", a, b);
    case BinaryOp::kMul:
      if (ints) {
        int64_t r;
        if (__builtin_mul_overflow(a.AsInt(), b.AsInt(), &r)) return overflow();
        return Value::Int(r);
      }
      if (numbers) return Value::Float(a.AsDouble() * b.AsDouble());
      if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) {
        return Repeat(a, b.AsInt(), max_bytes);
      }
      if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) {
        return Repeat(b, a.AsInt(), max_bytes);
      }
      return Unsupported("*", a, b);
    case BinaryOp::kDiv:
      if (!numbers) return Unsupported("/", a, b);
      if (b.AsDouble() == 0) return absl::InvalidArgumentError("division by zero");
      return Value::Float(a.AsDouble() / b.AsDouble());
    case BinaryOp::kFloorDiv:
      if (!numbers) return Unsupported("//", a, b);
      if (b.AsDouble() == 0)
        return absl::InvalidArgumentError("integer division or modulo by zero");
      if (ints) {
        const int64_t x = a.AsInt(), y = b.AsInt();
        if (x == std::numeric_limits<int64_t>::min() && y == -1) return overflow();
        int64_t q = x / y;
        if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
        return Value::Int(q);
      }
      return Value::Float(std::floor(a.AsDouble() / b.AsDouble()));
    case BinaryOp::kMod:
      if (!numbers) return Unsupported("%", a, b);
      if (b.AsDouble() == 0)
        return absl::InvalidArgumentError("integer division or modulo by zero");
      if (ints) {
        const int64_t x = a.AsInt(), y = b.AsInt();
        if (y == -1) return Value::Int(0);
        int64_t r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
        return Value::Int(r);
      } else {
        const double x = a.AsDouble(), y = b.AsDouble();
        double r = std::fmod(x, y);
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
        return Value::Float(r);
      }
    case BinaryOp::kPow:
      if (!numbers) return Unsupported("**", a, b);
      if (ints && b.AsInt() >= 0) {
        const int64_t base = a.AsInt(), exponent = b.AsInt();
        if (base == 0 || base == 1) return Value::Int(exponent == 0 ? 1 : base);
        if (base == -1) return Value::Int(exponent % 2 == 0 ? 1 : -1);
        int64_t r = 1;  // |base| >= 2: at most 63 multiplications before an overflow
        for (int64_t i = 0; i < exponent; ++i) {
          if (__builtin_mul_overflow(r, base, &r)) return overflow();
        }
        return Value::Int(r);
      }
      return Value::Float(std::pow(a.AsDouble(), b.AsDouble()));
    case BinaryOp::kConcat:
      break;
  }
  return Unsupported(OpText(op), a, b);
}

absl::StatusOr<bool> Contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kString:
      if (!item.is_string()) {
        return absl::InvalidArgumentError(
            Cat("'in <string>' requires string as left operand, not ", TypeName(item)));
      }
      return container.string_value().find(item.string_value()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& v : container.items()) {
        if (Equals(v, item)) return true;
      }
      return false;
    case Value::Kind::kDict:
      if (container.is_namespace()) break;
      return item.is_string() && container.dict().Find(item.string_value()) != nullptr;
    case Value::Kind::kUndefined:
      return false;
    default:
      break;
  }
  return absl::InvalidArgumentError(
      Cat("argument of type '", TypeName(container), "' is not iterable"));
}

}  // namespace

absl::StatusOr<Value> Renderer::Eval(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kConst:
      return e.value;
    case ExprKind::kName:
      return Lookup(e.name);
    case ExprKind::kList:
    case ExprKind::kTuple: {
      std::vector<Value> items;
      items.reserve(e.args.size());
      for (const ExprPtr& a : e.args) {
        WR_ASSIGN_OR_RETURN(Value v, Eval(*a));
        items.push_back(std::move(v));
      }
      return Value::MakeList(std::move(items), e.kind == ExprKind::kTuple);
    }
    case ExprKind::kDict: {
      auto dict = std::make_shared<Dict>();
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        WR_ASSIGN_OR_RETURN(Value key, Eval(*e.args[i]));
        WR_ASSIGN_OR_RETURN(Value value, Eval(*e.args[i + 1]));
        if (!key.is_string()) {
          return absl::InvalidArgumentError(
              Cat("unsupported dict key of type '", TypeName(key), "'"));
        }
        dict->Set(key.string_value(), std::move(value));
      }
      return Value::MakeDict(std::move(dict));
    }
    case ExprKind::kGetattr: {
      WR_ASSIGN_OR_RETURN(Value object, Eval(*e.object));
      return GetAttr(object, e.name);
    }
    case ExprKind::kGetitem: {
      WR_ASSIGN_OR_RETURN(Value object, Eval(*e.object));
      const Expr& sub = *e.args[0];
      if (sub.kind == ExprKind::kSlice) {
        std::optional<int64_t> parts[3];
        for (int i = 0; i < 3; ++i) {
          if (!sub.args[i]) continue;
          WR_ASSIGN_OR_RETURN(Value v, Eval(*sub.args[i]));
          if (v.is_none()) continue;
          if (!v.is_int() && !v.is_bool()) {
            return absl::InvalidArgumentError(
                "slice indices must be integers or None or have an __index__ method");
          }
          parts[i] = v.AsInt();
        }
        return GetSlice(object, parts[0], parts[1], parts[2]);
      }
      WR_ASSIGN_OR_RETURN(Value key, Eval(sub));
      return GetItem(object, key);
    }
    case ExprKind::kSlice:
      return absl::InvalidArgumentError("a slice outside a subscript");
    case ExprKind::kCall:
      return EvalCall(e);
    case ExprKind::kFilter:
      return EvalFilter(e);
    case ExprKind::kTest: {
      WR_ASSIGN_OR_RETURN(Value operand, Eval(*e.object));
      WR_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e));
      WR_ASSIGN_OR_RETURN(bool result, ApplyTest(e.test, operand, args));
      return Value::Bool(result != e.negated);
    }
    case ExprKind::kNot: {
      WR_ASSIGN_OR_RETURN(Value v, Eval(*e.object));
      return Value::Bool(!Truthy(v));
    }
    case ExprKind::kNeg:
    case ExprKind::kPos: {
      WR_ASSIGN_OR_RETURN(Value v, Eval(*e.object));
      if (v.is_undefined()) return absl::InvalidArgumentError(UndefinedMessage(v));
      if (!v.is_number()) {
        return absl::InvalidArgumentError(Cat("bad operand type for unary ",
                                              e.kind == ExprKind::kNeg ? "-" : "+", ": '",
                                              TypeName(v), "'"));
      }
      if (e.kind == ExprKind::kPos) return v.is_bool() ? Value::Int(v.AsInt()) : v;
      if (v.is_float()) return Value::Float(-v.float_value());
      if (v.AsInt() == std::numeric_limits<int64_t>::min()) {
        return absl::InvalidArgumentError("integer overflow");
      }
      return Value::Int(-v.AsInt());
    }
    case ExprKind::kBinary:
      return EvalBinary(e);
    case ExprKind::kAnd: {
      WR_ASSIGN_OR_RETURN(Value a, Eval(*e.args[0]));
      if (!Truthy(a)) return a;
      return Eval(*e.args[1]);
    }
    case ExprKind::kOr: {
      WR_ASSIGN_OR_RETURN(Value a, Eval(*e.args[0]));
      if (Truthy(a)) return a;
      return Eval(*e.args[1]);
    }
    case ExprKind::kCompare:
      return EvalCompare(e);
    case ExprKind::kCondExpr: {
      WR_ASSIGN_OR_RETURN(Value cond, Eval(*e.args[1]));
      if (Truthy(cond)) return Eval(*e.args[0]);
      if (e.args[2]) return Eval(*e.args[2]);
      return Value::Undefined("the inline if expression evaluated to false and no else section");
    }
  }
  return absl::InternalError("unknown expression");
}

namespace {

// The operands of a left-nested chain of `op` (a + b + c parses as (a + b) + c), leftmost first.
void ChainOperands(const Expr& e, BinaryOp op, absl::InlinedVector<const Expr*, 8>& operands) {
  const Expr* x = &e;
  while (x->kind == ExprKind::kBinary && x->op == op) {
    operands.push_back(x->args[1].get());
    x = x->args[0].get();
  }
  operands.push_back(x);
  std::reverse(operands.begin(), operands.end());
}

}  // namespace

// Templates build their output as chains of concatenations ('<|im_start|>' + role + '\n' +
// content + '<|im_end|>\n'); evaluated pairwise, each `+` copies everything to its left, so a
// long message was copied once per operator and again into the output. Here the operands are
// evaluated left to right as Python does, adjacent strings are kept (shared, not copied) and
// joined once, and anything else is combined pairwise with Arithmetic at the point Python would:
// the same result, the same errors in the same order.
absl::StatusOr<Value> Renderer::EvalChain(const Expr& e, std::string* out, bool* appended) {
  const BinaryOp op = e.op;
  absl::InlinedVector<const Expr*, 8> operands;
  ChainOperands(e, op, operands);
  absl::InlinedVector<Value, 8> strings;  // a run of strings not yet joined
  size_t bytes = 0;
  std::optional<Value> acc;  // the result so far when it is not a run of strings
  const auto join = [&strings, &bytes] {
    std::string text;
    text.reserve(bytes);
    for (const Value& v : strings) text += v.string_value();
    strings.clear();
    bytes = 0;
    return Value::String(std::move(text));
  };
  for (size_t i = 0; i < operands.size(); ++i) {
    WR_ASSIGN_OR_RETURN(Value v, Eval(*operands[i]));
    if (op == BinaryOp::kConcat && !v.is_string()) v = Value::String(ToStr(v));
    if (v.is_string() && !acc.has_value() && (i == 0 || !strings.empty())) {
      bytes += v.string_value().size();
      if (bytes > limits_.max_output_bytes) {
        return absl::ResourceExhaustedError("a string exceeds the output limit");
      }
      strings.push_back(std::move(v));
      continue;
    }
    if (i == 0) {
      acc = std::move(v);
      continue;
    }
    Value left = acc.has_value() ? std::move(*acc) : join();
    WR_ASSIGN_OR_RETURN(acc, Arithmetic(op, left, v, limits_.max_output_bytes));
  }
  if (acc.has_value()) return std::move(*acc);
  if (out != nullptr) {
    if (out->size() + bytes > limits_.max_output_bytes) {
      return absl::ResourceExhaustedError(
          Cat("the rendered template exceeds ", limits_.max_output_bytes, " bytes"));
    }
    for (const Value& v : strings) out->append(v.string_value());
    *appended = true;
    return Value();
  }
  return join();
}

absl::StatusOr<Value> Renderer::EvalBinary(const Expr& e) {
  if (e.op == BinaryOp::kAdd || e.op == BinaryOp::kConcat) return EvalChain(e, nullptr, nullptr);
  WR_ASSIGN_OR_RETURN(Value a, Eval(*e.args[0]));
  WR_ASSIGN_OR_RETURN(Value b, Eval(*e.args[1]));
  if (e.op == BinaryOp::kConcat) {
    std::string text = ToStr(a);
    text += ToStr(b);
    if (text.size() > limits_.max_output_bytes) {
      return absl::ResourceExhaustedError("a string exceeds the output limit");
    }
    return Value::String(std::move(text));
  }
  return Arithmetic(e.op, a, b, limits_.max_output_bytes);
}

absl::StatusOr<Value> Renderer::EvalCompare(const Expr& e) {
  WR_ASSIGN_OR_RETURN(Value left, Eval(*e.args[0]));
  for (size_t i = 0; i < e.compare_ops.size(); ++i) {
    WR_ASSIGN_OR_RETURN(Value right, Eval(*e.args[i + 1]));
    bool result = false;
    switch (e.compare_ops[i]) {
      case CompareOp::kEq:
        result = Equals(left, right);
        break;
      case CompareOp::kNe:
        result = !Equals(left, right);
        break;
      case CompareOp::kIn:
      case CompareOp::kNotIn: {
        WR_ASSIGN_OR_RETURN(bool in, Contains(right, left));
        result = in == (e.compare_ops[i] == CompareOp::kIn);
        break;
      }
      default: {
        static constexpr const char* kText[] = {"==", "!=", "<", "<=", ">", ">="};
        const char* text = kText[static_cast<int>(e.compare_ops[i])];
        if (left.is_undefined()) return absl::InvalidArgumentError(UndefinedMessage(left));
        if (right.is_undefined()) return absl::InvalidArgumentError(UndefinedMessage(right));
        WR_ASSIGN_OR_RETURN(int c, Compare(left, right, text));
        switch (e.compare_ops[i]) {
          case CompareOp::kLt:
            result = c < 0;
            break;
          case CompareOp::kLe:
            result = c <= 0;
            break;
          case CompareOp::kGt:
            result = c > 0;
            break;
          default:
            result = c >= 0;
        }
      }
    }
    if (!result) return Value::Bool(false);
    left = std::move(right);
  }
  return Value::Bool(true);
}

absl::StatusOr<CallArgs> Renderer::EvalArgs(const Expr& e) {
  CallArgs args;
  args.positional.reserve(e.args.size());
  for (const ExprPtr& a : e.args) {
    WR_ASSIGN_OR_RETURN(Value v, Eval(*a));
    args.positional.push_back(std::move(v));
  }
  for (const auto& [key, expr] : e.kwargs) {
    WR_ASSIGN_OR_RETURN(Value v, Eval(*expr));
    args.keyword.emplace_back(key, std::move(v));
  }
  return args;
}

absl::StatusOr<Value> Renderer::EvalCall(const Expr& e) {
  if (e.object->kind == ExprKind::kGetattr) {
    // `text.strip(...)`: the method is called on its receiver without being made first (the
    // attribute cannot fail for a method, so the arguments are evaluated after it as before).
    WR_ASSIGN_OR_RETURN(Value receiver, Eval(*e.object->object));
    if (IsBoundMethod(receiver, e.object->name)) {
      WR_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e));
      return CallMethod(receiver, e.object->name, args, env_);
    }
    WR_ASSIGN_OR_RETURN(Value callee, GetAttr(receiver, e.object->name));
    WR_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e));
    return Call(callee, args, e.line);
  }
  WR_ASSIGN_OR_RETURN(Value callee, Eval(*e.object));
  WR_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e));
  return Call(callee, args, e.line);
}

absl::StatusOr<Value> Renderer::Call(const Value& callee, const CallArgs& args, int line) {
  if (callee.is_undefined()) return absl::InvalidArgumentError(UndefinedMessage(callee));
  if (!callee.is_callable()) {
    return absl::InvalidArgumentError(Cat("'", TypeName(callee), "' object is not callable"));
  }
  const Callable& c = callee.callable();
  switch (c.type) {
    case Callable::Type::kMacro:
      return CallMacro(c, args, line);
    case Callable::Type::kMethod:
      return CallMethod(c.receiver, c.name, args, env_);
    case Callable::Type::kGlobal:
      if (c.name == "raise_exception") {
        const Value* message = args.Get(0, "message");
        return RaisedError(message == nullptr ? "" : ToStr(*message));
      }
      return CallGlobal(c.name, args, env_);
  }
  return absl::InternalError("unknown callable");
}

absl::StatusOr<Value> Renderer::EvalFilter(const Expr& e) {
  Value operand;
  if (e.object) {
    WR_ASSIGN_OR_RETURN(operand, Eval(*e.object));
  } else if (filter_block_operand_ != nullptr) {
    operand = *filter_block_operand_;
  }
  WR_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e));
  return ApplyFilter(e.filter, operand, args, env_);
}

}  // namespace warmroute::jinja
