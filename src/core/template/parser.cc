#include "core/template/parser.h"

#include "common/status.h"
#include "core/template/parser_state.h"

namespace warmroute::jinja {
namespace parser_internal {
namespace {

// Tags Jinja2 has that this interpreter does not run.
constexpr std::string_view kUnsupportedTags[] = {
    "include",    "extends", "import", "from",      "block", "call",  "with",
    "autoescape", "do",      "trans",  "pluralize", "print", "debug",
};

}  // namespace

absl::StatusOr<Body> Parser::Run() {
  Body body;
  std::string end;
  WR_RETURN_IF_ERROR(ParseBody({}, body, end));
  if (Cur().type != TokenType::kEof) return Error("unexpected end tag");
  return body;
}

absl::Status Parser::ParseBody(const std::vector<std::string_view>& ends, Body& body,
                               std::string& end) {
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

absl::StatusOr<StmtPtr> Parser::ParseStatement() {
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

absl::Status Parser::ParseTargets(std::vector<std::string>& targets, bool allow_attribute,
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

}  // namespace parser_internal

absl::StatusOr<Body> ParseTemplate(const std::vector<Token>& tokens, int max_depth) {
  parser_internal::Parser parser(tokens, max_depth);
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
