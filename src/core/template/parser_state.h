// The parser's state and its grammar rules, shared by parser.cc (statements) and
// expression_parser.cc (expressions, with Jinja2's precedence: conditional, or, and, not,
// comparisons and `in`, + -, ~, * / // %, **, unary - +, then postfix access, calls, filters and
// tests).
//
// Internal to core/template's parser. Thread-safety: one Parser per parse.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/template/ast.h"
#include "core/template/cat.h"
#include "core/template/lexer.h"

namespace warmroute::jinja::parser_internal {

inline bool IsTag(const Token& t, std::string_view name) {
  return t.type == TokenType::kName && t.value == name;
}
inline bool IsOp(const Token& t, std::string_view op) {
  return t.type == TokenType::kOperator && t.value == op;
}

inline ExprPtr MakeExpr(ExprKind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, int max_depth)
      : tokens_(tokens), max_depth_(max_depth) {}

  absl::StatusOr<Body> Run();

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
  absl::Status ParseBody(const std::vector<std::string_view>& ends, Body& body, std::string& end);

  absl::StatusOr<StmtPtr> ParseStatement();

  // for/set targets: a name, names separated by commas (optionally in parentheses), or with
  // `allow_attribute`, "ns.attr".
  absl::Status ParseTargets(std::vector<std::string>& targets, bool allow_attribute,
                            std::string* attribute);

  bool AtTupleEnd(const std::vector<std::string_view>& extra_ends) const;

  // Expressions separated by commas: a tuple when there is a comma, else the one expression.
  absl::StatusOr<ExprPtr> ParseTuple(bool with_condexpr,
                                     const std::vector<std::string_view>& extra_ends,
                                     bool explicit_parens = false);

  absl::StatusOr<ExprPtr> ParseExpression(bool with_condexpr);

  absl::StatusOr<ExprPtr> ParseCondExpr();

  absl::StatusOr<ExprPtr> ParseBinaryChain(ExprKind kind, std::string_view keyword,
                                           absl::StatusOr<ExprPtr> (Parser::*operand)());

  absl::StatusOr<ExprPtr> ParseOr();
  absl::StatusOr<ExprPtr> ParseAnd();

  absl::StatusOr<ExprPtr> ParseNot();

  absl::StatusOr<ExprPtr> ParseCompare();

  absl::StatusOr<ExprPtr> ParseBinary(const std::vector<std::pair<std::string_view, BinaryOp>>& ops,
                                      absl::StatusOr<ExprPtr> (Parser::*operand)());

  absl::StatusOr<ExprPtr> ParseMath1();
  absl::StatusOr<ExprPtr> ParseConcat();
  absl::StatusOr<ExprPtr> ParseMath2();
  absl::StatusOr<ExprPtr> ParsePow();
  absl::StatusOr<ExprPtr> ParseUnaryWithFilter() { return ParseUnary(true); }

  absl::StatusOr<ExprPtr> ParseUnary(bool with_filter);

  absl::StatusOr<ExprPtr> ParsePrimary();

  absl::StatusOr<ExprPtr> ParsePostfix(ExprPtr node);

  // x[a], x[a:b:c] (each part optional).
  absl::StatusOr<ExprPtr> ParseSubscript();

  absl::Status ParseCallArgs(Expr& call);

  absl::StatusOr<ExprPtr> ParseCall(ExprPtr callee);

  absl::StatusOr<ExprPtr> ParseFilterExpr(ExprPtr node);

  // One or more "|name(args)" (`start_inline`: the first has no '|', as in {% filter %}).
  absl::StatusOr<ExprPtr> ParseFilter(ExprPtr node, bool start_inline);

  // select('test'), map('filter'): the names given as constants must exist.
  absl::Status CheckNamedArgs(const Expr& f);

  absl::StatusOr<ExprPtr> ParseTest(ExprPtr node);

  const std::vector<Token>& tokens_;
  const int max_depth_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};
}  // namespace warmroute::jinja::parser_internal
