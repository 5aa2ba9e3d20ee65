// Parser's expression rules (parser_state.h).
#include <charconv>

#include "common/status.h"
#include "core/template/builtins.h"
#include "core/template/parser_state.h"

namespace warmroute::jinja::parser_internal {

bool Parser::AtTupleEnd(const std::vector<std::string_view>& extra_ends) const {
  const Token& t = Cur();
  if (t.type == TokenType::kVariableEnd || t.type == TokenType::kBlockEnd ||
      t.type == TokenType::kEof || IsOp(t, ")")) {
    return true;
  }
  for (std::string_view e : extra_ends) {
    if (IsTag(t, e)) return true;
  }
  return false;
}

absl::StatusOr<ExprPtr> Parser::ParseTuple(bool with_condexpr,
                                           const std::vector<std::string_view>& extra_ends,
                                           bool explicit_parens) {
  const int line = Cur().line;
  std::vector<ExprPtr> items;
  bool comma = false;
  while (true) {
    if (!items.empty()) {
      if (!IsOp(Cur(), ",")) break;
      Next();
      comma = true;
    }
    if (AtTupleEnd(extra_ends)) break;
    absl::StatusOr<ExprPtr> e = ParseExpression(with_condexpr);
    if (!e.ok()) return e.status();
    items.push_back(*std::move(e));
  }
  if (items.size() == 1 && !comma) return std::move(items[0]);
  if (items.empty() && !explicit_parens) return Error("expected an expression");
  ExprPtr tuple = MakeExpr(ExprKind::kTuple, line);
  tuple->args = std::move(items);
  return tuple;
}

absl::StatusOr<ExprPtr> Parser::ParseExpression(bool with_condexpr) {
  WR_RETURN_IF_ERROR(Enter());
  absl::StatusOr<ExprPtr> e = with_condexpr ? ParseCondExpr() : ParseOr();
  Leave();
  return e;
}

absl::StatusOr<ExprPtr> Parser::ParseCondExpr() {
  absl::StatusOr<ExprPtr> expr = ParseOr();
  if (!expr.ok()) return expr;
  ExprPtr result = *std::move(expr);
  while (IsTag(Cur(), "if")) {
    const int line = Cur().line;
    Next();
    absl::StatusOr<ExprPtr> cond = ParseOr();
    if (!cond.ok()) return cond;
    ExprPtr node = MakeExpr(ExprKind::kCondExpr, line);
    node->args.push_back(std::move(result));
    node->args.push_back(*std::move(cond));
    if (IsTag(Cur(), "else")) {
      Next();
      absl::StatusOr<ExprPtr> other = ParseExpression(true);  // bounded nesting
      if (!other.ok()) return other;
      node->args.push_back(*std::move(other));
    } else {
      node->args.push_back(nullptr);
    }
    result = std::move(node);
  }
  return result;
}

absl::StatusOr<ExprPtr> Parser::ParseBinaryChain(ExprKind kind, std::string_view keyword,
                                                 absl::StatusOr<ExprPtr> (Parser::*operand)()) {
  absl::StatusOr<ExprPtr> left = (this->*operand)();
  if (!left.ok()) return left;
  ExprPtr result = *std::move(left);
  while (IsTag(Cur(), keyword)) {
    const int line = Cur().line;
    Next();
    absl::StatusOr<ExprPtr> right = (this->*operand)();
    if (!right.ok()) return right;
    ExprPtr node = MakeExpr(kind, line);
    node->args.push_back(std::move(result));
    node->args.push_back(*std::move(right));
    result = std::move(node);
  }
  return result;
}

absl::StatusOr<ExprPtr> Parser::ParseOr() {
  return ParseBinaryChain(ExprKind::kOr, "or", &Parser::ParseAnd);
}

absl::StatusOr<ExprPtr> Parser::ParseAnd() {
  return ParseBinaryChain(ExprKind::kAnd, "and", &Parser::ParseNot);
}

absl::StatusOr<ExprPtr> Parser::ParseNot() {
  if (IsTag(Cur(), "not")) {
    const int line = Cur().line;
    Next();
    WR_RETURN_IF_ERROR(Enter());
    absl::StatusOr<ExprPtr> operand = ParseNot();
    Leave();
    if (!operand.ok()) return operand;
    ExprPtr node = MakeExpr(ExprKind::kNot, line);
    node->object = *std::move(operand);
    return node;
  }
  return ParseCompare();
}

absl::StatusOr<ExprPtr> Parser::ParseCompare() {
  const int line = Cur().line;
  absl::StatusOr<ExprPtr> first = ParseMath1();
  if (!first.ok()) return first;
  ExprPtr node = MakeExpr(ExprKind::kCompare, line);
  node->args.push_back(*std::move(first));
  while (true) {
    std::optional<CompareOp> op;
    const Token& t = Cur();
    if (IsOp(t, "==")) op = CompareOp::kEq;
    if (IsOp(t, "!=")) op = CompareOp::kNe;
    if (IsOp(t, "<")) op = CompareOp::kLt;
    if (IsOp(t, "<=")) op = CompareOp::kLe;
    if (IsOp(t, ">")) op = CompareOp::kGt;
    if (IsOp(t, ">=")) op = CompareOp::kGe;
    if (IsTag(t, "in")) op = CompareOp::kIn;
    if (IsTag(t, "not") && IsTag(Peek(), "in")) {
      op = CompareOp::kNotIn;
      Next();
    }
    if (!op) break;
    Next();
    absl::StatusOr<ExprPtr> right = ParseMath1();
    if (!right.ok()) return right;
    node->compare_ops.push_back(*op);
    node->args.push_back(*std::move(right));
  }
  if (node->compare_ops.empty()) return std::move(node->args[0]);
  return node;
}

absl::StatusOr<ExprPtr> Parser::ParseBinary(
    const std::vector<std::pair<std::string_view, BinaryOp>>& ops,
    absl::StatusOr<ExprPtr> (Parser::*operand)()) {
  absl::StatusOr<ExprPtr> left = (this->*operand)();
  if (!left.ok()) return left;
  ExprPtr result = *std::move(left);
  while (true) {
    const BinaryOp* found = nullptr;
    for (const auto& [text, op] : ops) {
      if (IsOp(Cur(), text)) found = &op;
    }
    if (found == nullptr) break;
    const int line = Cur().line;
    Next();
    absl::StatusOr<ExprPtr> right = (this->*operand)();
    if (!right.ok()) return right;
    ExprPtr node = MakeExpr(ExprKind::kBinary, line);
    node->op = *found;
    node->args.push_back(std::move(result));
    node->args.push_back(*std::move(right));
    result = std::move(node);
  }
  return result;
}

absl::StatusOr<ExprPtr> Parser::ParseMath1() {
  return ParseBinary({{"+", BinaryOp::kAdd}, {"-", BinaryOp::kSub}}, &Parser::ParseConcat);
}

absl::StatusOr<ExprPtr> Parser::ParseConcat() {
  return ParseBinary({{"~", BinaryOp::kConcat}}, &Parser::ParseMath2);
}

absl::StatusOr<ExprPtr> Parser::ParseMath2() {
  return ParseBinary({{"*", BinaryOp::kMul},
                      {"/", BinaryOp::kDiv},
                      {"//", BinaryOp::kFloorDiv},
                      {"%", BinaryOp::kMod}},
                     &Parser::ParsePow);
}

absl::StatusOr<ExprPtr> Parser::ParsePow() {
  return ParseBinary({{"**", BinaryOp::kPow}}, &Parser::ParseUnaryWithFilter);
}

absl::StatusOr<ExprPtr> Parser::ParseUnary(bool with_filter) {
  WR_RETURN_IF_ERROR(Enter());
  const int line = Cur().line;
  absl::StatusOr<ExprPtr> node;
  if (IsOp(Cur(), "-") || IsOp(Cur(), "+")) {
    const bool neg = IsOp(Cur(), "-");
    Next();
    absl::StatusOr<ExprPtr> operand = ParseUnary(false);
    if (!operand.ok()) return operand;
    ExprPtr n = MakeExpr(neg ? ExprKind::kNeg : ExprKind::kPos, line);
    n->object = *std::move(operand);
    node = std::move(n);
  } else {
    node = ParsePrimary();
  }
  if (node.ok()) node = ParsePostfix(*std::move(node));
  if (node.ok() && with_filter) node = ParseFilterExpr(*std::move(node));
  Leave();
  return node;
}

absl::StatusOr<ExprPtr> Parser::ParsePrimary() {
  const Token t = Cur();
  if (t.type == TokenType::kName) {
    Next();
    ExprPtr e = MakeExpr(ExprKind::kConst, t.line);
    if (t.value == "true" || t.value == "True") {
      e->value = Value::Bool(true);
    } else if (t.value == "false" || t.value == "False") {
      e->value = Value::Bool(false);
    } else if (t.value == "none" || t.value == "None") {
      e->value = Value::None();
    } else {
      e->kind = ExprKind::kName;
      e->name = t.value;
    }
    return e;
  }
  if (t.type == TokenType::kString) {
    std::string text;
    while (Cur().type == TokenType::kString) {
      text += Cur().value;
      Next();
    }
    ExprPtr e = MakeExpr(ExprKind::kConst, t.line);
    e->value = Value::String(std::move(text));
    return e;
  }
  if (t.type == TokenType::kInteger || t.type == TokenType::kFloat) {
    Next();
    ExprPtr e = MakeExpr(ExprKind::kConst, t.line);
    if (t.type == TokenType::kInteger) {
      int64_t v = 0;
      const auto r = std::from_chars(t.value.data(), t.value.data() + t.value.size(), v);
      if (r.ec != std::errc()) return Error("integer literal out of range");
      e->value = Value::Int(v);
    } else {
      double v = 0;
      std::from_chars(t.value.data(), t.value.data() + t.value.size(), v);
      e->value = Value::Float(v);
    }
    return e;
  }
  if (IsOp(t, "(")) {
    Next();
    absl::StatusOr<ExprPtr> e = ParseTuple(true, {}, /*explicit_parens=*/true);
    if (!e.ok()) return e;
    WR_RETURN_IF_ERROR(ExpectOp(")"));
    return e;
  }
  if (IsOp(t, "[")) {
    Next();
    ExprPtr list = MakeExpr(ExprKind::kList, t.line);
    while (!IsOp(Cur(), "]")) {
      if (!list->args.empty()) {
        WR_RETURN_IF_ERROR(ExpectOp(","));
        if (IsOp(Cur(), "]")) break;
      }
      absl::StatusOr<ExprPtr> item = ParseExpression(true);
      if (!item.ok()) return item;
      list->args.push_back(*std::move(item));
    }
    Next();
    return list;
  }
  if (IsOp(t, "{")) {
    Next();
    ExprPtr dict = MakeExpr(ExprKind::kDict, t.line);
    while (!IsOp(Cur(), "}")) {
      if (!dict->args.empty()) {
        WR_RETURN_IF_ERROR(ExpectOp(","));
        if (IsOp(Cur(), "}")) break;
      }
      absl::StatusOr<ExprPtr> key = ParseExpression(true);
      if (!key.ok()) return key;
      WR_RETURN_IF_ERROR(ExpectOp(":"));
      absl::StatusOr<ExprPtr> value = ParseExpression(true);
      if (!value.ok()) return value;
      dict->args.push_back(*std::move(key));
      dict->args.push_back(*std::move(value));
    }
    Next();
    return dict;
  }
  return Error(Cat("unexpected ", Describe(t)));
}

absl::StatusOr<ExprPtr> Parser::ParsePostfix(ExprPtr node) {
  while (true) {
    const int line = Cur().line;
    if (IsOp(Cur(), ".")) {
      Next();
      if (Cur().type == TokenType::kName) {
        ExprPtr e = MakeExpr(ExprKind::kGetattr, line);
        e->name = Cur().value;
        e->object = std::move(node);
        node = std::move(e);
      } else if (Cur().type == TokenType::kInteger) {
        ExprPtr e = MakeExpr(ExprKind::kGetitem, line);
        ExprPtr index = MakeExpr(ExprKind::kConst, line);
        index->value = Value::Int(std::stoll(Cur().value));
        e->args.push_back(std::move(index));
        e->object = std::move(node);
        node = std::move(e);
      } else {
        return Error("expected an attribute name");
      }
      Next();
    } else if (IsOp(Cur(), "[")) {
      Next();
      ExprPtr e = MakeExpr(ExprKind::kGetitem, line);
      absl::StatusOr<ExprPtr> sub = ParseSubscript();
      if (!sub.ok()) return sub;
      WR_RETURN_IF_ERROR(ExpectOp("]"));
      e->args.push_back(*std::move(sub));
      e->object = std::move(node);
      node = std::move(e);
    } else if (IsOp(Cur(), "(")) {
      absl::StatusOr<ExprPtr> call = ParseCall(std::move(node));
      if (!call.ok()) return call;
      node = *std::move(call);
    } else {
      return node;
    }
  }
}

absl::StatusOr<ExprPtr> Parser::ParseSubscript() {
  const int line = Cur().line;
  ExprPtr parts[3];
  int part = 0;
  bool is_slice = false;
  while (true) {
    if (IsOp(Cur(), ":")) {
      if (++part > 2) return Error("too many ':' in a slice");
      is_slice = true;
      Next();
      continue;
    }
    if (IsOp(Cur(), "]")) break;
    if (parts[part]) return Error("expected ']'");
    absl::StatusOr<ExprPtr> e = ParseExpression(true);
    if (!e.ok()) return e;
    parts[part] = *std::move(e);
  }
  if (!is_slice) {
    if (!parts[0]) return Error("expected a subscript");
    return std::move(parts[0]);
  }
  ExprPtr slice = MakeExpr(ExprKind::kSlice, line);
  for (auto& p : parts) slice->args.push_back(std::move(p));
  return slice;
}

absl::Status Parser::ParseCallArgs(Expr& call) {
  WR_RETURN_IF_ERROR(ExpectOp("("));
  while (!IsOp(Cur(), ")")) {
    if (!call.args.empty() || !call.kwargs.empty()) {
      WR_RETURN_IF_ERROR(ExpectOp(","));
      if (IsOp(Cur(), ")")) break;
    }
    if (IsOp(Cur(), "*") || IsOp(Cur(), "**")) return Error("unsupported *args in a call");
    if (Cur().type == TokenType::kName && IsOp(Peek(), "=")) {
      std::string key = Cur().value;
      Next();
      Next();
      absl::StatusOr<ExprPtr> v = ParseExpression(true);
      if (!v.ok()) return v.status();
      call.kwargs.emplace_back(std::move(key), *std::move(v));
    } else {
      if (!call.kwargs.empty()) return Error("positional argument follows keyword argument");
      absl::StatusOr<ExprPtr> v = ParseExpression(true);
      if (!v.ok()) return v.status();
      call.args.push_back(*std::move(v));
    }
  }
  Next();
  return absl::OkStatus();
}

absl::StatusOr<ExprPtr> Parser::ParseCall(ExprPtr callee) {
  ExprPtr call = MakeExpr(ExprKind::kCall, Cur().line);
  WR_RETURN_IF_ERROR(ParseCallArgs(*call));
  if (callee->kind == ExprKind::kGetattr) {
    if (!IsKnownMethod(callee->name) && !IsMutatingMethod(callee->name)) {
      return absl::InvalidArgumentError(
          Cat("unsupported method '", callee->name, "' at line ", call->line));
    }
  } else if (callee->kind == ExprKind::kName) {
    if (callee->name == "caller") {
      return absl::InvalidArgumentError(Cat("unsupported function 'caller' at line ", call->line));
    }
    if (!IsGlobalFunction(callee->name)) {
      global_calls.push_back(CallSite{callee->name, call->line});
    }
  }
  call->object = std::move(callee);
  return call;
}

absl::StatusOr<ExprPtr> Parser::ParseFilterExpr(ExprPtr node) {
  while (true) {
    if (IsOp(Cur(), "|")) {
      absl::StatusOr<ExprPtr> f = ParseFilter(std::move(node), false);
      if (!f.ok()) return f;
      node = *std::move(f);
    } else if (IsTag(Cur(), "is")) {
      absl::StatusOr<ExprPtr> t = ParseTest(std::move(node));
      if (!t.ok()) return t;
      node = *std::move(t);
    } else if (IsOp(Cur(), "(")) {
      absl::StatusOr<ExprPtr> call = ParseCall(std::move(node));
      if (!call.ok()) return call;
      node = *std::move(call);
    } else {
      return node;
    }
  }
}

absl::StatusOr<ExprPtr> Parser::ParseFilter(ExprPtr node, bool start_inline) {
  while (IsOp(Cur(), "|") || start_inline) {
    if (!start_inline) Next();
    start_inline = false;
    if (Cur().type != TokenType::kName) return Error("expected a filter name");
    const int line = Cur().line;
    std::string name = Cur().value;
    Next();
    while (IsOp(Cur(), ".")) {
      Next();
      if (Cur().type != TokenType::kName) return Error("expected a filter name");
      name += "." + Cur().value;
      Next();
    }
    const std::optional<FilterId> id = FindFilter(name);
    if (!id) {
      return absl::InvalidArgumentError(Cat("unsupported filter '", name, "' at line ", line));
    }
    ExprPtr f = MakeExpr(ExprKind::kFilter, line);
    f->name = name;
    f->filter = *id;
    f->object = std::move(node);
    if (IsOp(Cur(), "(")) WR_RETURN_IF_ERROR(ParseCallArgs(*f));
    WR_RETURN_IF_ERROR(CheckNamedArgs(*f));
    node = std::move(f);
  }
  return node;
}

absl::Status Parser::CheckNamedArgs(const Expr& f) {
  const auto constant = [&](size_t i) -> const std::string* {
    if (i >= f.args.size() || f.args[i]->kind != ExprKind::kConst ||
        !f.args[i]->value.is_string()) {
      return nullptr;
    }
    return &f.args[i]->value.string_value();
  };
  const std::string* name = nullptr;
  bool is_test = true;
  if (f.filter == FilterId::kSelect || f.filter == FilterId::kReject) name = constant(0);
  if (f.filter == FilterId::kSelectAttr || f.filter == FilterId::kRejectAttr) name = constant(1);
  if (f.filter == FilterId::kMap && f.kwargs.empty()) {
    name = constant(0);
    is_test = false;
  }
  if (name == nullptr) return absl::OkStatus();
  if (is_test ? FindTest(*name).has_value() : FindFilter(*name).has_value()) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      Cat("unsupported ", is_test ? "test" : "filter", " '", *name, "' at line ", f.line));
}

absl::StatusOr<ExprPtr> Parser::ParseTest(ExprPtr node) {
  const int line = Cur().line;
  Next();  // "is"
  bool negated = false;
  if (IsTag(Cur(), "not")) {
    negated = true;
    Next();
  }
  if (Cur().type != TokenType::kName) return Error("expected a test name");
  std::string name = Cur().value;
  Next();
  const std::optional<TestId> id = FindTest(name);
  if (!id) {
    return absl::InvalidArgumentError(Cat("unsupported test '", name, "' at line ", line));
  }
  ExprPtr t = MakeExpr(ExprKind::kTest, line);
  t->name = name;
  t->test = *id;
  t->negated = negated;
  t->object = std::move(node);
  const Token& c = Cur();
  if (IsOp(c, "(")) {
    WR_RETURN_IF_ERROR(ParseCallArgs(*t));
  } else if ((c.type == TokenType::kName || c.type == TokenType::kString ||
              c.type == TokenType::kInteger || c.type == TokenType::kFloat || IsOp(c, "[") ||
              IsOp(c, "{")) &&
             !IsTag(c, "else") && !IsTag(c, "or") && !IsTag(c, "and") && !IsTag(c, "if") &&
             !IsTag(c, "in") && !IsTag(c, "not") && !IsTag(c, "recursive")) {
    if (IsTag(c, "is")) return Error("you cannot chain multiple tests with is");
    absl::StatusOr<ExprPtr> arg = ParsePrimary();
    if (!arg.ok()) return arg;
    absl::StatusOr<ExprPtr> post = ParsePostfix(*std::move(arg));
    if (!post.ok()) return post;
    t->args.push_back(*std::move(post));
  }
  return t;
}

}  // namespace warmroute::jinja::parser_internal
