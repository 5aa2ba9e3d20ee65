#include "core/template/template.h"

#include <algorithm>

#include "common/status.h"
#include "core/template/lexer.h"
#include "core/template/parser.h"
#include "core/template/py_text.h"
#include "core/template/template_analysis.h"

namespace warmroute::jinja {

struct Template::Program {
  Body body;
  Limits limits;
  std::set<std::string> undeclared;
  bool loops_over_content = false;
};

absl::StatusOr<Template> Template::Parse(std::string_view source, const Limits& limits) {
  if (!IsValidUtf8(source)) return absl::InvalidArgumentError("the template is not valid UTF-8");
  WR_ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(source));
  auto program = std::make_shared<Program>();
  WR_ASSIGN_OR_RETURN(program->body, ParseTemplate(tokens, limits.max_nesting));
  program->limits = limits;
  program->undeclared = UndeclaredVariables(program->body);
  program->loops_over_content = LoopsOverMessageContent(program->body);
  return Template(std::move(program));
}

absl::StatusOr<std::string> Template::Render(const Value& variables,
                                             const RenderOptions& options) const {
  if (!variables.is_dict()) return absl::InvalidArgumentError("template variables must be a dict");
  BuiltinEnv env;
  env.max_string_bytes = program_->limits.max_output_bytes;
  env.max_depth = program_->limits.max_nesting;
  env.time_zone = options.time_zone;
  env.has_clock = options.clock != nullptr;
  if (options.clock != nullptr) env.now = options.clock->Now();
  if (options.fallback_variables != nullptr && !options.fallback_variables->is_dict()) {
    return absl::InvalidArgumentError("template fallback variables must be a dict");
  }
  Renderer renderer(program_->body, variables, program_->limits, std::move(env),
                    options.fallback_variables);
  return renderer.Run(std::min(options.expected_bytes, program_->limits.max_output_bytes));
}

const std::set<std::string>& Template::undeclared_variables() const { return program_->undeclared; }

bool Template::loops_over_message_content() const { return program_->loops_over_content; }

}  // namespace warmroute::jinja
