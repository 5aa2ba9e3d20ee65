// A Jinja chat template, parsed once and rendered any number of times, as transformers renders
// it (a Jinja2 ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks, loop controls and
// its own tojson, raise_exception and strftime_now; see docs/templates.md for the language
// supported and what is refused).
//
// Usage:
//   absl::StatusOr<jinja::Template> t = jinja::Template::Parse(source);
//   if (!t.ok()) ...  // "unsupported filter 'wordwrap' at line 3"
//   auto vars = std::make_shared<jinja::Dict>();
//   vars->Set("messages", ...);
//   FixedWallClock clock(...);
//   absl::StatusOr<std::string> text =
//       t->Render(jinja::Value::MakeDict(vars), {.clock = &clock});
//
// Untrusted templates and variables are safe to render: every render is bounded (Limits) and
// ends with an error status, never a crash or a hang.
//
// Thread-safety: a Template is immutable; any number of threads may render it at once.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/wall_clock.h"
#include "core/template/renderer.h"
#include "core/template/value.h"

namespace warmroute::jinja {

struct RenderOptions {
  // strftime_now's date; nullptr makes strftime_now an error.
  const WallClock* clock = nullptr;
  // strftime_now's time zone (transformers uses the server's local time).
  absl::TimeZone time_zone = absl::UTCTimeZone();
  // The output's expected size, reserved at the start (the output is the same whatever it is).
  size_t expected_bytes = 0;
  // A dict of variables read where `variables` has no such name (a model's special tokens,
  // shared by every render instead of copied into each one's variables); null: none.
  const Value* fallback_variables = nullptr;
};

class Template {
 public:
  // Parses `source`. InvalidArgument for a syntax error or an unsupported construct, naming it
  // and its line; for a source that is not UTF-8.
  static absl::StatusOr<Template> Parse(std::string_view source, const Limits& limits = {});

  // The text the template renders with `variables` (a dict: messages, tools, bos_token, ...).
  // InvalidArgument for the template's errors (raise_exception's message as it is; others with
  // their line), ResourceExhausted when a bound of Limits is reached.
  absl::StatusOr<std::string> Render(const Value& variables, const RenderOptions& options) const;

  // The variables the template reads without assigning them (template_analysis.h).
  const std::set<std::string>& undeclared_variables() const;
  // Whether it loops over a message's content (template_analysis.h).
  bool loops_over_message_content() const;

 private:
  struct Program;
  explicit Template(std::shared_ptr<const Program> program) : program_(std::move(program)) {}

  std::shared_ptr<const Program> program_;
};

}  // namespace warmroute::jinja
