#include "core/template/renderer.h"

#include "absl/strings/cord.h"
#include "common/status.h"
#include "core/template/access.h"
#include "core/template/cat.h"

namespace warmroute::jinja {
namespace {

// Marks the errors a template raised itself (raise_exception): their text is kept as it is.
constexpr absl::string_view kRaisedPayload = "warmroute.jinja/raised";
constexpr absl::string_view kLinePayload = "warmroute.jinja/line";

// Whether `v` is `dict` or holds it (to a bounded depth; deeper counts as holding it).
bool Holds(const Value& v, const Dict& dict, int depth) {
  if (depth > 64) return true;
  if (v.is_dict()) {
    if (&v.dict() == &dict) return true;
    for (const auto& entry : v.dict().entries()) {
      if (Holds(entry.second, dict, depth + 1)) return true;
    }
  } else if (v.is_list()) {
    for (const Value& item : v.items()) {
      if (Holds(item, dict, depth + 1)) return true;
    }
  } else if (v.is_callable() && v.callable().type == Callable::Type::kMethod) {
    return Holds(v.callable().receiver, dict, depth + 1);
  }
  return false;
}

}  // namespace

absl::Status AtLine(absl::Status status, int line) {
  if (status.ok() || status.GetPayload(kRaisedPayload) || status.GetPayload(kLinePayload) ||
      line <= 0 || status.code() == absl::StatusCode::kResourceExhausted) {
    return status;
  }
  absl::Status out(status.code(), Cat(status.message(), " (template line ", line, ")"));
  out.SetPayload(kLinePayload, absl::Cord("1"));
  return out;
}

absl::Status RaisedError(std::string_view message) {
  absl::Status s = absl::InvalidArgumentError(AbslView(message));
  s.SetPayload(kRaisedPayload, absl::Cord("1"));
  return s;
}

Renderer::Renderer(const Body& program, const Value& variables, const Limits& limits,
                   BuiltinEnv env, const Value* fallback)
    : program_(program),
      variables_(variables),
      fallback_(fallback),
      limits_(limits),
      env_(std::move(env)) {
  frames_.reserve(8);  // the top level and a few nested loops, without growing
  frames_.emplace_back();
}

absl::StatusOr<std::string> Renderer::Run(size_t reserve) {
  std::string out;
  out.reserve(reserve);
  WR_RETURN_IF_ERROR(Exec(program_, out));
  return out;
}

absl::Status Renderer::Append(std::string_view text, std::string& out) const {
  if (out.size() + text.size() > limits_.max_output_bytes) {
    return absl::ResourceExhaustedError(
        Cat("the rendered template exceeds ", limits_.max_output_bytes, " bytes"));
  }
  out.append(text);
  return absl::OkStatus();
}

absl::Status Renderer::Exec(const Body& body, std::string& out) {
  for (const StmtPtr& stmt : body) {
    WR_RETURN_IF_ERROR(ExecStmt(*stmt, out));
    if (flow_ != Flow::kNormal) break;
  }
  return absl::OkStatus();
}

absl::Status Renderer::ExecStmt(const Stmt& stmt, std::string& out) {
  switch (stmt.kind) {
    case StmtKind::kText:
      return Append(stmt.text, out);
    case StmtKind::kOutput: {
      if (stmt.expr->kind == ExprKind::kBinary &&
          (stmt.expr->op == BinaryOp::kAdd || stmt.expr->op == BinaryOp::kConcat)) {
        bool appended = false;
        absl::StatusOr<Value> v = EvalChain(*stmt.expr, &out, &appended);
        if (!v.ok()) return AtLine(v.status(), stmt.line);
        if (appended) return absl::OkStatus();
        return Append(ToStr(*v), out);
      }
      absl::StatusOr<Value> v = Eval(*stmt.expr);
      if (!v.ok()) return AtLine(v.status(), stmt.line);
      if (v->is_string()) return Append(v->string_value(), out);
      return Append(ToStr(*v), out);
    }
    case StmtKind::kIf:
      for (const auto& [condition, body] : stmt.branches) {
        absl::StatusOr<Value> c = Eval(*condition);
        if (!c.ok()) return AtLine(c.status(), condition->line);
        if (Truthy(*c)) return Exec(body, out);
      }
      return Exec(stmt.else_body, out);
    case StmtKind::kFor:
      return ExecFor(stmt, out);
    case StmtKind::kSet:
      return AtLine(ExecSet(stmt), stmt.line);
    case StmtKind::kSetBlock: {
      std::string text;
      WR_RETURN_IF_ERROR(Exec(stmt.body, text));
      Assign(stmt.targets[0], Value::String(std::move(text)));
      return absl::OkStatus();
    }
    case StmtKind::kMacro: {
      auto c = std::make_shared<Callable>();
      c->type = Callable::Type::kMacro;
      c->name = stmt.macro->name;
      c->macro = stmt.macro.get();
      Assign(stmt.macro->name, Value::MakeCallable(std::move(c)));
      return absl::OkStatus();
    }
    case StmtKind::kFilterBlock: {
      std::string text;
      WR_RETURN_IF_ERROR(Exec(stmt.body, text));
      const Value operand = Value::String(std::move(text));
      filter_block_operand_ = &operand;
      absl::StatusOr<Value> v = Eval(*stmt.expr);
      filter_block_operand_ = nullptr;
      if (!v.ok()) return AtLine(v.status(), stmt.line);
      return Append(ToStr(*v), out);
    }
    case StmtKind::kBreak:
      flow_ = Flow::kBreak;
      return absl::OkStatus();
    case StmtKind::kContinue:
      flow_ = Flow::kContinue;
      return absl::OkStatus();
    case StmtKind::kScope: {
      // transformers renders {% generation %} as a call block: a scope of its own.
      PushFrame();
      absl::Status status = Exec(stmt.body, out);
      PopFrame();
      return status;
    }
  }
  return absl::OkStatus();
}

absl::Status Renderer::ExecFor(const Stmt& stmt, std::string& out) {
  absl::StatusOr<Value> iterable = Eval(*stmt.expr);
  if (!iterable.ok()) return AtLine(iterable.status(), stmt.line);
  // A list is iterated in place (lists are never modified once built, and `iterable` holds it
  // for the loop); anything else, or a filtered list, as a copy of its items.
  std::vector<Value> owned;
  const std::vector<Value>* items = &owned;
  if (iterable->is_list() && !stmt.condition) {
    items = &iterable->items();
  } else {
    absl::StatusOr<std::vector<Value>> all = Iterate(*iterable);
    if (!all.ok()) return AtLine(all.status(), stmt.line);
    if (stmt.condition) {
      // The inline "if" filters the items first: loop.* counts only those kept.
      for (Value& item : *all) {
        PushFrame();
        absl::Status bound = Bind(stmt.targets, item, stmt.line);
        absl::StatusOr<Value> keep =
            bound.ok() ? Eval(*stmt.condition) : absl::StatusOr<Value>(bound);
        PopFrame();
        if (!keep.ok()) return AtLine(keep.status(), stmt.line);
        if (Truthy(*keep)) owned.push_back(std::move(item));
      }
    } else {
      owned = *std::move(all);
    }
  }
  const int64_t length = static_cast<int64_t>(items->size());
  // `loop`: one dict for the whole loop, updated at each iteration, as Jinja2 keeps one
  // LoopContext (a `loop` kept past its iteration shows the iteration the loop is at).
  static const Value* const no_previous = new Value(Value::Undefined("there is no previous item"));
  static const Value* const no_next = new Value(Value::Undefined("there is no next item"));
  enum : size_t { kIndex, kIndex0, kRevindex, kRevindex0, kFirst, kLast, kPrevitem = 9, kNextitem };
  auto loop = std::make_shared<Dict>();
  if (length > 0) {
    loop->Reserve(11);
    for (const char* key : {"index", "index0", "revindex", "revindex0", "first", "last"}) {
      loop->Add(key, Value());
    }
    loop->Add("length", Value::Int(length));
    loop->Add("depth", Value::Int(1));
    loop->Add("depth0", Value::Int(0));
    loop->Add("previtem", Value());
    loop->Add("nextitem", Value());
  }
  for (int64_t i = 0; i < length; ++i) {
    if (++iterations_ > limits_.max_loop_iterations) {
      return absl::ResourceExhaustedError(
          Cat("the template ran more than ", limits_.max_loop_iterations, " loop iterations"));
    }
    loop->SetAt(kIndex, Value::Int(i + 1));
    loop->SetAt(kIndex0, Value::Int(i));
    loop->SetAt(kRevindex, Value::Int(length - i));
    loop->SetAt(kRevindex0, Value::Int(length - i - 1));
    loop->SetAt(kFirst, Value::Bool(i == 0));
    loop->SetAt(kLast, Value::Bool(i == length - 1));
    loop->SetAt(kPrevitem, i > 0 ? (*items)[i - 1] : *no_previous);
    loop->SetAt(kNextitem, i + 1 < length ? (*items)[i + 1] : *no_next);
    PushFrame();
    frames_.back().reserve(stmt.targets.size() + 4);  // the targets, `loop` and a few `set`s
    absl::Status status = Bind(stmt.targets, (*items)[i], stmt.line);
    if (status.ok()) {
      frames_.back().emplace_back("loop", Value::MakeDict(loop));
      status = Exec(stmt.body, out);
    }
    PopFrame();
    WR_RETURN_IF_ERROR(status);
    if (flow_ == Flow::kBreak) {
      flow_ = Flow::kNormal;
      break;
    }
    flow_ = Flow::kNormal;
  }
  if (length == 0) return Exec(stmt.else_body, out);
  return absl::OkStatus();
}

absl::Status Renderer::ExecSet(const Stmt& stmt) {
  WR_ASSIGN_OR_RETURN(Value value, Eval(*stmt.expr));
  if (!stmt.attribute.empty()) {
    const Value target = Lookup(stmt.targets[0]);
    if (!target.is_namespace()) {
      return absl::InvalidArgumentError("cannot assign attribute on non-namespace object");
    }
    if (Holds(value, target.dict(), 0)) {
      // Jinja2 allows it; refused here: the cycle would outlive the render.
      return absl::InvalidArgumentError("a namespace cannot hold itself");
    }
    target.mutable_dict().Set(stmt.attribute, std::move(value));
    return absl::OkStatus();
  }
  return Bind(stmt.targets, value, stmt.line);
}

absl::Status Renderer::Bind(const std::vector<std::string>& targets, const Value& value, int line) {
  if (targets.size() == 1) {
    Assign(targets[0], value);
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<Value>> items = Iterate(value);
  if (!items.ok()) return AtLine(items.status(), line);
  if (items->size() != targets.size()) {
    return AtLine(absl::InvalidArgumentError(
                      items->size() > targets.size()
                          ? Cat("too many values to unpack (expected ", targets.size(), ")")
                          : Cat("not enough values to unpack (expected ", targets.size(), ", got ",
                                items->size(), ")")),
                  line);
  }
  for (size_t i = 0; i < targets.size(); ++i) Assign(targets[i], (*items)[i]);
  return absl::OkStatus();
}

void Renderer::PushFrame() {
  if (spare_frames_.empty()) {
    frames_.emplace_back();
    return;
  }
  frames_.push_back(std::move(spare_frames_.back()));
  spare_frames_.pop_back();
}

void Renderer::PopFrame() {
  frames_.back().clear();
  spare_frames_.push_back(std::move(frames_.back()));
  frames_.pop_back();
}

void Renderer::Assign(std::string name, Value value) {
  Frame& frame = frames_.back();
  for (auto& entry : frame) {
    if (entry.first == name) {
      entry.second = std::move(value);
      return;
    }
  }
  frame.emplace_back(std::move(name), std::move(value));
}

Value Renderer::Lookup(std::string_view name) const {
  const auto find = [&](const Frame& frame) -> const Value* {
    for (auto it = frame.rbegin(); it != frame.rend(); ++it) {
      if (it->first == name) return &it->second;
    }
    return nullptr;
  };
  for (size_t i = frames_.size(); i > frame_base_; --i) {
    if (const Value* v = find(frames_[i - 1])) return *v;
  }
  if (frame_base_ > 0) {
    if (const Value* v = find(frames_[0])) return *v;
  }
  if (const Value* v = variables_.dict().Find(name)) return *v;
  if (fallback_ != nullptr) {
    if (const Value* v = fallback_->dict().Find(name)) return *v;
  }
  if (const Value* global = GlobalFunction(name)) return *global;
  return Value::Undefined(Cat("'", name, "' is undefined"));
}

absl::StatusOr<Value> Renderer::CallMacro(const Callable& callable, const CallArgs& args,
                                          int line) {
  const MacroDef& macro = *static_cast<const MacroDef*>(callable.macro);
  if (macro_depth_ >= limits_.max_macro_depth) {
    return absl::ResourceExhaustedError(Cat(
        "macro calls nest deeper than ", limits_.max_macro_depth, " (macro '", macro.name, "')"));
  }
  if (args.positional.size() > macro.params.size()) {
    return absl::InvalidArgumentError(
        Cat("macro '", macro.name, "' takes not more than ", macro.params.size(), " argument(s)"));
  }
  Frame frame;
  const size_t first_default = macro.params.size() - macro.defaults.size();
  for (const auto& [key, value] : args.keyword) {
    bool known = false;
    for (const std::string& p : macro.params) known |= p == key;
    if (!known) {
      return absl::InvalidArgumentError(
          Cat("macro '", macro.name, "' takes no keyword argument '", key, "'"));
    }
  }
  // Parameters and defaults are evaluated in the macro's own scope.
  const size_t saved_base = frame_base_;
  PushFrame();
  frame_base_ = frames_.size() - 1;
  ++macro_depth_;
  absl::Status status;
  for (size_t i = 0; i < macro.params.size() && status.ok(); ++i) {
    const std::string& p = macro.params[i];
    const Value* given = args.Get(i, p);
    if (given != nullptr) {
      Assign(p, *given);
    } else if (i >= first_default) {
      absl::StatusOr<Value> d = Eval(*macro.defaults[i - first_default]);
      if (d.ok()) {
        Assign(p, *std::move(d));
      } else {
        status = d.status();
      }
    } else {
      Assign(p, Value::Undefined(Cat("parameter '", p, "' was not provided")));
    }
  }
  std::string out;
  if (status.ok()) status = Exec(macro.body, out);
  flow_ = Flow::kNormal;
  --macro_depth_;
  PopFrame();
  frame_base_ = saved_base;
  if (!status.ok()) return AtLine(status, line);
  return Value::String(std::move(out));
}

}  // namespace warmroute::jinja
