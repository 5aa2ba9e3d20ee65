// Runs a parsed template (ast.h) over its variables, as Jinja2 runs it in transformers'
// environment:
//   - scopes: `set` at the top level is seen by the rest of the template; a for loop's body is a
//     scope of its own, new for each iteration (its `set`s end with the iteration); if blocks
//     are not scopes; a macro's body sees its parameters and the template's top level;
//   - a variable is looked up in the scopes from the innermost out, then in the render's
//     variables (and their fallback), then in the globals (range, namespace, dict, raise_exception,
//     strftime_now);
//   - Undefined prints as "", iterates as nothing and is false; using it otherwise
//     (x.attr, x + 1) is an error;
//   - raise_exception(message) ends the render with InvalidArgument(message).
// Every render is bounded (Limits): output bytes, loop iterations, macro call depth.
//
// Internal to core/template: callers use template.h. Thread-safety: one Renderer per render.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/template/ast.h"
#include "core/template/builtins.h"
#include "core/template/value.h"

namespace warmroute::jinja {

struct Limits {
  size_t max_output_bytes = size_t{16} << 20;  // also bounds every string built on the way
  int64_t max_loop_iterations = 1'000'000;     // all loops of one render together
  int max_macro_depth = 64;                    // nested macro calls (recursion)
  int max_nesting = 128;                       // parse nesting and tojson depth
};

class Renderer {
 public:
  // `variables` must be a dict, and `fallback` null or a dict whose names `variables` lacks are
  // seen too; `program` and both dicts must outlive the renderer.
  Renderer(const Body& program, const Value& variables, const Limits& limits, BuiltinEnv env,
           const Value* fallback = nullptr);
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  // `reserve`: bytes reserved for the output at the start.
  absl::StatusOr<std::string> Run(size_t reserve = 0);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  using Frame = std::vector<std::pair<std::string, Value>>;

  // Statements (renderer.cc).
  absl::Status Exec(const Body& body, std::string& out);
  absl::Status ExecStmt(const Stmt& stmt, std::string& out);
  absl::Status ExecFor(const Stmt& stmt, std::string& out);
  absl::Status ExecSet(const Stmt& stmt);
  absl::Status Append(std::string_view text, std::string& out) const;
  absl::Status Bind(const std::vector<std::string>& targets, const Value& value, int line);
  void Assign(std::string name, Value value);
  Value Lookup(std::string_view name) const;
  // Opens a scope (a new innermost frame) and closes the innermost one. A closed frame's storage
  // is kept for the next scope: a loop opens one per iteration.
  void PushFrame();
  void PopFrame();
  absl::StatusOr<Value> CallMacro(const Callable& macro, const CallArgs& args, int line);

  // Expressions (evaluate.cc).
  absl::StatusOr<Value> Eval(const Expr& e);
  absl::StatusOr<Value> EvalBinary(const Expr& e);
  // A chain of `+` or `~` (EvalBinary's case). With `out`, a result that is a string is appended
  // to *out instead (the output statement's case: no copy of the whole) and *appended is set.
  absl::StatusOr<Value> EvalChain(const Expr& e, std::string* out, bool* appended);
  absl::StatusOr<Value> EvalCompare(const Expr& e);
  absl::StatusOr<Value> EvalCall(const Expr& e);
  absl::StatusOr<Value> EvalFilter(const Expr& e);
  absl::StatusOr<CallArgs> EvalArgs(const Expr& e);
  absl::StatusOr<Value> Call(const Value& callee, const CallArgs& args, int line);

  const Body& program_;
  const Value& variables_;
  const Value* const fallback_;
  const Limits limits_;
  const BuiltinEnv env_;
  std::vector<Frame> frames_;  // frames_[0]: the template's top level
  std::vector<Frame> spare_frames_;  // closed frames, empty, their storage kept
  size_t frame_base_ = 0;      // lookups see frames_[frame_base_...] and frames_[0]
  Flow flow_ = Flow::kNormal;
  int64_t iterations_ = 0;
  int macro_depth_ = 0;
  const Value* filter_block_operand_ = nullptr;  // {% filter %}: the rendered body
};

// An error at `line` of the template: "<message> (line N)" keeps raise_exception's own text first.
absl::Status AtLine(absl::Status status, int line);
// The error raise_exception(message) ends a render with: InvalidArgument(message), left as it is.
absl::Status RaisedError(std::string_view message);

}  // namespace warmroute::jinja
