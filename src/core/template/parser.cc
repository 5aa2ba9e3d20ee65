#include "core/template/parser.h"

#include <charconv>
#include <set>

#include "common/status.h"
#include "core/template/cat.h"

namespace warmroute::jinja {
namespace {

bool IsTag(const Token& t, std::string_view name) {
  return t.type == TokenType::kName && t.value == name;
}
bool IsOp(const Token& t, std::string_view op) {
  return t.type == TokenType::kOperator && t.value == op;
}

ExprPtr MakeExpr(ExprKind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

// Tags Jinja2 has that this interpreter does not run.
constexpr std::string_view kUnsupportedTags[] = {
    "include",    "extends", "import", "from",      "block", "call",  "with",
    "autoescape", "do",      "trans",  "pluralize", "print", "debug",
};

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, int max_depth)
      : tokens_(tokens), max_depth_(max_depth) {}

  absl::StatusOr<Body> Run() {
    Body body;
    std::string end;
    WR_RETURN_IF_ERROR(ParseBody({}, body, end));
    if (Cur().type != TokenType::kEof) return Error("unexpected end tag");
    return body;
  }

  // Names of macros the template defines (for the call checks).
  std::set<std::string> macro_names;
  struct CallSite {
    std::string name;
    int line;
  };
  std::vector<CallSite> global_calls;

 private:
  const Token& Cur() const { return tokens_[pos_]; }
  const Token& Peek(size_t k = 1) const { return tokens_[std::min(pos_ + k, tokens_.size() - 1)]; }
  void Next() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }

  absl::Status Error(std::string_view message) const {
    return absl::InvalidArgumentError(Cat(message, " at line ", Cur().line));
  }
  absl::Status Expect(TokenType type, std::string_view what) {
    if (Cur().type != type) {
      return Error(Cat("expected ", what, ", got ", Describe(Cur())));
    }
    Next();
    return absl::OkStatus();
  }
  absl::Status ExpectOp(std::string_view op) {
    if (!IsOp(Cur(), op)) return Error(Cat("expected '", op, "', got ", Describe(Cur())));
    Next();
    return absl::OkStatus();
  }
  static std::string Describe(const Token& t) {
    switch (t.type) {
      case TokenType::kEof:
        return "end of template";
      case TokenType::kBlockEnd:
        return "end of statement block";
      case TokenType::kVariableEnd:
        return "end of print statement";
      case TokenType::kData:
        return "template data";
      default:
        return Cat("'", t.value, "'");
    }
  }

  absl::Status Enter() {
    if (++depth_ > max_depth_) return Error("the template nests too deeply");
    return absl::OkStatus();
  }
  void Leave() { --depth_; }

  // Parses statements until a block tag named in `ends` (left as the current token, its name
  // stored in `end`) or the end of the template.
  absl::Status ParseBody(const std::vector<std::string_view>& ends, Body& body, std::string& end) {
    WR_RETURN_IF_ERROR(Enter());
    while (true) {
      const Token& t = Cur();
      if (t.type == TokenType::kEof) {
        if (!ends.empty()) {
          return Error(Cat("unexpected end of template: missing '", ends.back(), "'"));
        }
        break;
      }
      if (t.type == TokenType::kData) {
        auto stmt = std::make_unique<Stmt>();
        stmt->kind = StmtKind::kText;
        stmt->line = t.line;
        stmt->text = t.value;
        body.push_back(std::move(stmt));
        Next();
        continue;
      }
      if (t.type == TokenType::kVariableBegin) {
        auto stmt = std::make_unique<Stmt>();
        stmt->kind = StmtKind::kOutput;
        stmt->line = t.line;
        Next();
        absl::StatusOr<ExprPtr> e = ParseTuple(true, {});
        if (!e.ok()) return e.status();
        stmt->expr = *std::move(e);
        WR_RETURN_IF_ERROR(Expect(TokenType::kVariableEnd, "'}}'"));
        body.push_back(std::move(stmt));
        continue;
      }
      if (t.type != TokenType::kBlockBegin) return Error("unexpected token");
      const Token& name = Peek();
      if (name.type != TokenType::kName) return Error("expected a tag name");
      bool is_end = false;
      for (std::string_view e : ends) is_end |= name.value == e;
      if (is_end) {
        Next();  // now at the tag name
        end = Cur().value;
        break;
      }
      Next();
      absl::StatusOr<StmtPtr> stmt = ParseStatement();
      if (!stmt.ok()) return stmt.status();
      body.push_back(*std::move(stmt));
    }
    Leave();
    return absl::OkStatus();
  }

  absl::StatusOr<StmtPtr> ParseStatement() {
    const Token& tag = Cur();
    auto stmt = std::make_unique<Stmt>();
    stmt->line = tag.line;
    const std::string name = tag.value;
    Next();
    if (name == "if") {
      stmt->kind = StmtKind::kIf;
      std::string end = "elif";
      while (end == "elif" || end == "if") {
        absl::StatusOr<ExprPtr> cond = ParseTuple(false, {});
        if (!cond.ok()) return cond.status();
        WR_RETURN_IF_ERROR(Expect(TokenType::kBlockEnd, "'%}'"));
        Body body;
        WR_RETURN_IF_ERROR(ParseBody({"elif", "else", "endif"}, body, end));
        Next();
        stmt->branches.emplace_back(*std::move(cond), std::move(body));
      }
      if (end == "else") {
        WR_RETURN_IF_ERROR(Expect(TokenType::kBlockEnd, "'%}'"));
        WR_RETURN_IF_ERROR(ParseBody({"endif"}, stmt->else_body, end));
        Next();
      }
    } else if (name == "for") {
      stmt->kind = StmtKind::kFor;
      WR_RETURN_IF_ERROR(ParseTargets(stmt->targets, false, nullptr));
      if (!IsTag(Cur(), "in")) return Error("expected 'in'");
      Next();
      absl::StatusOr<ExprPtr> iter = ParseTuple(false, {"recursive", "if"});
      if (!iter.ok()) return iter.status();
      stmt->expr = *std::move(iter);
      if (IsTag(Cur(), "if")) {
        Next();
        absl::StatusOr<ExprPtr> cond = ParseExpression(true);
        if (!cond.ok()) return cond.status();
        stmt->condition = *std::move(cond);
      }
      if (IsTag(Cur(), "recursive")) return Error("unsupported recursive for loop");
      WR_RETURN_IF_ERROR(Expect(TokenType::kBlockEnd, "'%}'"));
      std::string end;
      ++loop_depth_;
      WR_RETURN_IF_ERROR(ParseBody({"endfor", "else"}, stmt->body, end));
      --loop_depth_;
      Next();
      if (end == "else") {
        WR_RETURN_IF_ERROR(Expect(TokenType::kBlockEnd, "'%}'"));
        WR_RETURN_IF_ERROR(ParseBody({"endfor"}, stmt->else_body, end));
        Next();
      }
    } else if (name == "set") {
      WR_RETURN_IF_ERROR(ParseTargets(stmt->targets, true, &stmt->attribute));
      if (IsOp(Cur(), "=")) {
        stmt->kind = StmtKind::kSet;
        Next();
        absl::StatusOr<ExprPtr> value = ParseTuple(true, {});
        if (!value.ok()) return value.status();
        stmt->expr = *std::move(value);
      } else {
        if (stmt->targets.size() != 1 || !stmt->attribute.empty()) {
          return Error("a block set assigns one name");
        }
        if (IsOp(Cur(), "|")) return Error("unsupported filtered block set");
        stmt->kind = StmtKind::kSetBlock;
        WR_RETURN_IF_ERROR(Expect(TokenType::kBlockEnd, "'%}'"));
        std::string end;
        WR_RETURN_IF_ERROR(ParseBody({"endset"}, stmt->body, end));
        Next();
      }
    } else if (name == "macro") {
      stmt->kind = StmtKind::kMacro;
      stmt->macro = std::make_unique<MacroDef>();
      if (Cur().type != TokenType::kName) return Error("expected a macro name");
      stmt->macro->name = Cur().value;
      macro_names.insert(Cur().value);
      Next();
      WR_RETURN_IF_ERROR(ExpectOp("("));
      while (!IsOp(Cur(), ")")) {
        if (!stmt->macro->params.empty()) WR_RETURN_IF_ERROR(ExpectOp(","));
        if (Cur().type != TokenType::kName) return Error("expected a parameter name");
        stmt->macro->params.push_back(Cur().value);
        Next();
        if (IsOp(Cur(), "=")) {
          Next();
          absl::StatusOr<ExprPtr> d = ParseExpression(true);
          if (!d.ok()) return d.status();
          stmt->macro->defaults.push_back(*std::move(d));
        } else if (!stmt->macro->defaults.empty()) {
          return Error("non-default argument follows default argument");
        }
      }
      Next();
      WR_RETURN_IF_ERROR(Expect(TokenType::kBlockEnd, "'%}'"));
      const int saved_loops = loop_depth_;
      loop_depth_ = 0;
      std::string end;
      WR_RETURN_IF_ERROR(ParseBody({"endmacro"}, stmt->macro->body, end));
      loop_depth_ = saved_loops;
      Next();
    } else if (name == "filter") {
      stmt->kind = StmtKind::kFilterBlock;
      absl::StatusOr<ExprPtr> f = ParseFilter(nullptr, true);
      if (!f.ok()) return f.status();
      stmt->expr = *std::move(f);
      WR_RETURN_IF_ERROR(Expect(TokenType::kBlockEnd, "'%}'"));
      std::string end;
      WR_RETURN_IF_ERROR(ParseBody({"endfilter"}, stmt->body, end));
      Next();
    } else if (name == "generation") {
      // transformers' AssistantTracker tag: marks assistant text; renders its body in place.
      stmt->kind = StmtKind::kScope;
      WR_RETURN_IF_ERROR(Expect(TokenType::kBlockEnd, "'%}'"));
      std::string end;
      WR_RETURN_IF_ERROR(ParseBody({"endgeneration"}, stmt->body, end));
      Next();
    } else if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) return Error(Cat("'", name, "' outside of a loop"));
      stmt->kind = name == "break" ? StmtKind::kBreak : StmtKind::kContinue;
    } else {
      for (std::string_view unsupported : kUnsupportedTags) {
        if (name == unsupported) {
          return absl::InvalidArgumentError(Cat("unsupported tag '", name, "' at line ", tag.line));
        }
      }
      return absl::InvalidArgumentError(Cat("unknown tag '", name, "' at line ", tag.line));
    }
    WR_RETURN_IF_ERROR(Expect(TokenType::kBlockEnd, "'%}'"));
    return stmt;
  }

  // for/set targets: a name, names separated by commas (optionally in parentheses), or with
  // `allow_attribute`, "ns.attr".
  absl::Status ParseTargets(std::vector<std::string>& targets, bool allow_attribute,
                            std::string* attribute) {
    const bool paren = IsOp(Cur(), "(");
    if (paren) Next();
    while (true) {
      if (Cur().type != TokenType::kName) return Error("expected a name to assign to");
      targets.push_back(Cur().value);
      Next();
      if (allow_attribute && targets.size() == 1 && IsOp(Cur(), ".")) {
        Next();
        if (Cur().type != TokenType::kName) return Error("expected an attribute name");
        *attribute = Cur().value;
        Next();
        return absl::OkStatus();
      }
      if (!IsOp(Cur(), ",")) break;
      Next();
      if (!paren && (IsTag(Cur(), "in") || IsOp(Cur(), "="))) break;
      if (paren && IsOp(Cur(), ")")) break;
    }
    if (paren) return ExpectOp(")");
    return absl::OkStatus();
  }

  bool AtTupleEnd(const std::vector<std::string_view>& extra_ends) const {
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

  // Expressions separated by commas: a tuple when there is a comma, else the one expression.
  absl::StatusOr<ExprPtr> ParseTuple(bool with_condexpr,
                                     const std::vector<std::string_view>& extra_ends,
                                     bool explicit_parens = false) {
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

  absl::StatusOr<ExprPtr> ParseExpression(bool with_condexpr) {
    WR_RETURN_IF_ERROR(Enter());
    absl::StatusOr<ExprPtr> e = with_condexpr ? ParseCondExpr() : ParseOr();
    Leave();
    return e;
  }

  absl::StatusOr<ExprPtr> ParseCondExpr() {
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
        absl::StatusOr<ExprPtr> other = ParseCondExpr();
        if (!other.ok()) return other;
        node->args.push_back(*std::move(other));
      } else {
        node->args.push_back(nullptr);
      }
      result = std::move(node);
    }
    return result;
  }

  absl::StatusOr<ExprPtr> ParseBinaryChain(ExprKind kind, std::string_view keyword,
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

  absl::StatusOr<ExprPtr> ParseOr() {
    return ParseBinaryChain(ExprKind::kOr, "or", &Parser::ParseAnd);
  }
  absl::StatusOr<ExprPtr> ParseAnd() {
    return ParseBinaryChain(ExprKind::kAnd, "and", &Parser::ParseNot);
  }

  absl::StatusOr<ExprPtr> ParseNot() {
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

  absl::StatusOr<ExprPtr> ParseCompare() {
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

  absl::StatusOr<ExprPtr> ParseBinary(const std::vector<std::pair<std::string_view, BinaryOp>>& ops,
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

  absl::StatusOr<ExprPtr> ParseMath1() {
    return ParseBinary({{"+", BinaryOp::kAdd}, {"-", BinaryOp::kSub}}, &Parser::ParseConcat);
  }
  absl::StatusOr<ExprPtr> ParseConcat() {
    return ParseBinary({{"~", BinaryOp::kConcat}}, &Parser::ParseMath2);
  }
  absl::StatusOr<ExprPtr> ParseMath2() {
    return ParseBinary({{"*", BinaryOp::kMul},
                        {"/", BinaryOp::kDiv},
                        {"//", BinaryOp::kFloorDiv},
                        {"%", BinaryOp::kMod}},
                       &Parser::ParsePow);
  }
  absl::StatusOr<ExprPtr> ParsePow() {
    return ParseBinary({{"**", BinaryOp::kPow}}, &Parser::ParseUnaryWithFilter);
  }
  absl::StatusOr<ExprPtr> ParseUnaryWithFilter() { return ParseUnary(true); }

  absl::StatusOr<ExprPtr> ParseUnary(bool with_filter) {
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

  absl::StatusOr<ExprPtr> ParsePrimary() {
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

  absl::StatusOr<ExprPtr> ParsePostfix(ExprPtr node) {
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

  // x[a], x[a:b:c] (each part optional).
  absl::StatusOr<ExprPtr> ParseSubscript() {
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

  absl::Status ParseCallArgs(Expr& call) {
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

  absl::StatusOr<ExprPtr> ParseCall(ExprPtr callee) {
    ExprPtr call = MakeExpr(ExprKind::kCall, Cur().line);
    WR_RETURN_IF_ERROR(ParseCallArgs(*call));
    if (callee->kind == ExprKind::kGetattr) {
      if (!IsKnownMethod(callee->name) && !IsMutatingMethod(callee->name)) {
        return absl::InvalidArgumentError(
            Cat("unsupported method '", callee->name, "' at line ", call->line));
      }
    } else if (callee->kind == ExprKind::kName) {
      if (callee->name == "caller") {
        return absl::InvalidArgumentError(
            Cat("unsupported function 'caller' at line ", call->line));
      }
      if (!IsGlobalFunction(callee->name)) {
        global_calls.push_back(CallSite{callee->name, call->line});
      }
    }
    call->object = std::move(callee);
    return call;
  }

  absl::StatusOr<ExprPtr> ParseFilterExpr(ExprPtr node) {
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

  // One or more "|name(args)" (`start_inline`: the first has no '|', as in {% filter %}).
  absl::StatusOr<ExprPtr> ParseFilter(ExprPtr node, bool start_inline) {
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

  // select('test'), map('filter'): the names given as constants must exist.
  absl::Status CheckNamedArgs(const Expr& f) {
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

  absl::StatusOr<ExprPtr> ParseTest(ExprPtr node) {
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

  const std::vector<Token>& tokens_;
  const int max_depth_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

absl::StatusOr<Body> ParseTemplate(const std::vector<Token>& tokens, int max_depth) {
  Parser parser(tokens, max_depth);
  absl::StatusOr<Body> body = parser.Run();
  if (!body.ok()) return body;
  for (const auto& call : parser.global_calls) {
    if (parser.macro_names.count(call.name) == 0) {
      return absl::InvalidArgumentError(
          Cat("unsupported function '", call.name, "' at line ", call.line));
    }
  }
  return body;
}

}  // namespace warmroute::jinja
