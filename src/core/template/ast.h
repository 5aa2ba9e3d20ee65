// The syntax tree of a parsed template: statements (text, output, if, for, set, macro, ...) and
// expressions. Built by parser.h, walked by renderer.h; immutable once parsed.
//
// Thread-safety: immutable after parsing; any number of renders may read one tree.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/template/builtins.h"
#include "core/template/value.h"

namespace warmroute::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  kConst,     // value
  kName,      // name
  kList,      // args: the items
  kTuple,     // args: the items
  kDict,      // kwargs: key expressions are args[2i], values args[2i+1]
  kGetattr,   // object: x, name: the attribute ("x.name")
  kGetitem,   // object: x, args[0]: the subscript ("x[i]")
  kSlice,     // args: start, stop, step (each may be null): only as a kGetitem subscript
  kCall,      // object: the callee, args, kwargs
  kFilter,    // object: the operand, name/filter, args, kwargs
  kTest,      // object: the operand, name/test, args, kwargs; negated ("is not")
  kNot,       // object
  kNeg,       // object
  kPos,       // object
  kBinary,    // op, args[0], args[1]
  kAnd,       // args[0], args[1]
  kOr,        // args[0], args[1]
  kCompare,   // args[0], then each compare_ops[i] against args[i + 1]
  kCondExpr,  // args: then, condition, else (else may be null)
};

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kConcat };
enum class CompareOp { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

struct Expr {
  ExprKind kind;
  int line = 0;
  Value value;
  std::string name;
  ExprPtr object;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  BinaryOp op = BinaryOp::kAdd;
  std::vector<CompareOp> compare_ops;
  FilterId filter = FilterId::kDefault;
  TestId test = TestId::kDefined;
  bool negated = false;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind {
  kText,         // text
  kOutput,       // expr
  kIf,           // branches (condition, body); else_body
  kFor,          // targets, expr (the iterable), condition (the inline "if"), body, else_body
  kSet,          // targets (one name, or several to unpack), attribute ("ns.attr"), expr
  kSetBlock,     // targets[0], body (rendered into the variable)
  kMacro,        // macro
  kFilterBlock,  // expr: a kFilter whose object is null; body
  kBreak,
  kContinue,
  kScope,  // body ({% generation %}: rendered in place, in a scope of its own)
};

struct MacroDef {
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // for the last defaults.size() params
  Body body;
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr condition;
  std::vector<std::string> targets;
  std::string attribute;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::unique_ptr<MacroDef> macro;
};

}  // namespace warmroute::jinja
