#include "core/template/template_analysis.h"

#include <deque>
#include <functional>
#include <vector>

namespace warmroute::jinja {
namespace {

// Calls f on every expression below `e` (e included), depth first.
void ForEachExpr(const Expr* e, const std::function<void(const Expr&)>& f) {
  if (e == nullptr) return;
  f(*e);
  ForEachExpr(e->object.get(), f);
  for (const ExprPtr& a : e->args) ForEachExpr(a.get(), f);
  for (const auto& kw : e->kwargs) ForEachExpr(kw.second.get(), f);
}

// Calls f on every statement of `body`, nested ones included.
void ForEachStmt(const Body& body, const std::function<void(const Stmt&)>& f) {
  for (const StmtPtr& s : body) {
    f(*s);
    for (const auto& branch : s->branches) ForEachStmt(branch.second, f);
    ForEachStmt(s->body, f);
    ForEachStmt(s->else_body, f);
    if (s->macro) ForEachStmt(s->macro->body, f);
  }
}

class Undeclared {
 public:
  std::set<std::string> names;

  void Walk(const Body& body) {
    for (const StmtPtr& s : body) Visit(*s);
  }

 private:
  bool Declared(const std::string& name) const {
    for (const auto& scope : scopes_) {
      if (scope.count(name)) return true;
    }
    return false;
  }
  void Load(const Expr* e) {
    ForEachExpr(e, [this](const Expr& x) {
      if (x.kind == ExprKind::kName && !Declared(x.name)) names.insert(x.name);
    });
  }
  void Declare(const std::string& name) { scopes_.back().insert(name); }

  void Visit(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::kOutput:
        Load(s.expr.get());
        break;
      case StmtKind::kIf:
        for (const auto& [cond, body] : s.branches) {
          Load(cond.get());
          Walk(body);
        }
        Walk(s.else_body);
        break;
      case StmtKind::kFor:
        Load(s.expr.get());
        scopes_.emplace_back();
        for (const std::string& t : s.targets) Declare(t);
        Declare("loop");
        Load(s.condition.get());
        Walk(s.body);
        scopes_.pop_back();
        Walk(s.else_body);
        break;
      case StmtKind::kSet:
        Load(s.expr.get());
        if (s.attribute.empty()) {
          for (const std::string& t : s.targets) Declare(t);
        } else if (!Declared(s.targets[0])) {
          names.insert(s.targets[0]);
        }
        break;
      case StmtKind::kSetBlock:
        Walk(s.body);
        Declare(s.targets[0]);
        break;
      case StmtKind::kMacro:
        Declare(s.macro->name);
        scopes_.emplace_back();
        for (const std::string& p : s.macro->params) Declare(p);
        for (const ExprPtr& d : s.macro->defaults) Load(d.get());
        Walk(s.macro->body);
        scopes_.pop_back();
        break;
      case StmtKind::kFilterBlock:
        Walk(s.body);
        Load(s.expr.get());
        break;
      case StmtKind::kScope:
        Walk(s.body);
        break;
      default:
        break;
    }
  }

  std::vector<std::set<std::string>> scopes_{1};
};

bool IsVarAccess(const Expr* e, const std::string& var) {
  return e != nullptr && e->kind == ExprKind::kName && e->name == var;
}

bool IsAttrAccess(const Expr* e, const std::string& var, const std::string& key) {
  if (e == nullptr) return false;
  if (e->kind == ExprKind::kGetitem) {
    const Expr& arg = *e->args[0];
    return IsVarAccess(e->object.get(), var) && arg.kind == ExprKind::kConst &&
           arg.value.is_string() && arg.value.string_value() == key;
  }
  return e->kind == ExprKind::kGetattr && IsVarAccess(e->object.get(), var) && e->name == key;
}

// vLLM's _is_var_or_elems_access: `var` (or var[key]) seen through filters, tests and slices.
bool IsVarOrElemsAccess(const Expr* e, const std::string& var, const std::string& key) {
  if (e == nullptr) return false;
  if (e->kind == ExprKind::kFilter) return IsVarOrElemsAccess(e->object.get(), var, key);
  if (e->kind == ExprKind::kTest) return IsVarOrElemsAccess(e->object.get(), var, key);
  if (e->kind == ExprKind::kGetitem && e->args[0]->kind == ExprKind::kSlice) {
    return IsVarOrElemsAccess(e->object.get(), var, key);
  }
  return key.empty() ? IsVarAccess(e, var) : IsAttrAccess(e, var, key);
}

}  // namespace

std::set<std::string> UndeclaredVariables(const Body& program) {
  Undeclared u;
  u.Walk(program);
  return u.names;
}

bool LoopsOverMessageContent(const Body& program) {
  std::vector<const Stmt*> sets, loops;
  ForEachStmt(program, [&](const Stmt& s) {
    if (s.kind == StmtKind::kSet && s.attribute.empty() && s.targets.size() == 1) {
      sets.push_back(&s);
    }
    if (s.kind == StmtKind::kFor) loops.push_back(&s);
  });
  // The names bound to `messages` or slices of it, transitively.
  std::vector<std::string> message_lists = {"messages"};
  std::deque<std::string> pending = {"messages"};
  while (!pending.empty()) {
    const std::string var = pending.front();
    pending.pop_front();
    for (const Stmt* s : sets) {
      if (!IsVarOrElemsAccess(s->expr.get(), var, "")) continue;
      message_lists.push_back(s->targets[0]);
      if (s->targets[0] != var) pending.push_back(s->targets[0]);
      if (message_lists.size() > 1000) break;
    }
  }
  // The loop variables over those lists: the messages.
  std::vector<std::string> messages;
  for (const Stmt* loop : loops) {
    for (const std::string& list : message_lists) {
      if (loop->targets.size() == 1 && IsVarOrElemsAccess(loop->expr.get(), list, "")) {
        messages.push_back(loop->targets[0]);
        break;
      }
    }
  }
  for (const Stmt* loop : loops) {
    for (const std::string& message : messages) {
      if (IsVarOrElemsAccess(loop->expr.get(), message, "content")) return true;
    }
  }
  return false;
}

}  // namespace warmroute::jinja
