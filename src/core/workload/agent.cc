// agent: tool-using agents — a long tool-definitions prefix shared by every trajectory of an agent
// type, then a trajectory that grows step by step with the model's answers and tool results.
//
// Shape (chat), per trajectory:
//   - a system message: the agent type's instructions and tool definitions, JSON-ish function
//     schemas in OpenAI's tools format ({"type": "function", "function": {"name", "description",
//     "parameters": {...}}}), about tool_definition_tokens = 6,000 tokens (BuiltinTokenizer),
//     one of num_agent_types = 4 types chosen uniformly by trajectory (our choices: coding and
//     support agents commonly ship a few dozen tools; 6,000 tokens is about 33 schemas here);
//   - a user message: the task, task_tokens = 150 tokens;
//   - steps_per_trajectory = 8 steps; each step's answer (max_tokens = step_max_tokens = 150,
//     a tool call with its arguments) is appended as the assistant message together with a
//     tool result message (role "tool") of about tool_result_tokens = 300 tokens, and the next
//     step is released by OnResponse after an exponential tool latency of mean
//     tool_latency_mean_s = 1 s (our choice: an API call or a search).
// Trajectories start open-loop at Poisson arrivals of options.rate_per_s; options.num_requests
// counts all steps. Tenant: by agent type, "t<type mod num_tenants>", so a tenant's trajectories
// share the tool prefix.
//
// Parameters (WorkloadOptions::params; KEY = default, range: meaning):
//   agent_types = 4, 1..1e6: number of agent types, one tool prefix each (num_agent_types)
//   tool_definition_tokens = 6000, 1..1e6: about this many tokens of instructions and tools
//   task_tokens = 150, 1..1e6: tokens of each trajectory's task
//   tool_result_tokens = 300, 1..1e6: about this many tokens of each tool result
//   steps_per_trajectory = 8, 1..1e6: steps (requests) of each trajectory
//   step_max_tokens = 150, 1..1e6: max_tokens of every step
//   tool_latency_mean_s = 1.0, 0..1e6: mean delay between a response and the next step
// agent_types x tool_definition_tokens is at most 1e8.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/request/tokenizer.h"
#include "core/workload/generators.h"
#include "core/workload/sampling.h"
#include "core/workload/session_workload.h"
#include "core/workload/text.h"
#include "core/workload/workload_params.h"

namespace warmroute::workload {
namespace {

constexpr uint64_t kToolsSalt = 0xa901;
// Tokens of the JSON wrapper around a tool result's text (measured: 21 with a three-word tool
// name; 18 to 22 in general).
constexpr int64_t kResultWrapperTokens = 20;

// Draws are sequenced statement by statement: the order of evaluation of function arguments is
// unspecified, and the text must not depend on the compiler.
std::string Words(Rng& rng, int count) {
  std::string name(RandomWord(rng));
  for (int i = 1; i < count; ++i) {
    name += '_';
    name += RandomWord(rng);
  }
  return name;
}

// One tool schema on one line.
std::string ToolSchema(Rng& rng, const std::string& name) {
  static constexpr std::string_view kTypes[] = {"string", "integer", "boolean", "number"};
  std::string tool = R"({"type": "function", "function": {"name": ")" + name;
  tool += R"(", "description": ")";
  const int64_t description_tokens = 20 + static_cast<int64_t>(rng.UniformInt(20));
  tool += Prose(rng, description_tokens);
  tool += R"(", "parameters": {"type": "object", "properties": {)";
  const int num_params = 2 + static_cast<int>(rng.UniformInt(4));
  std::string required;
  for (int p = 0; p < num_params; ++p) {
    const std::string param = Words(rng, 2);
    if (p > 0) tool += ", ";
    tool += "\"" + param + R"(": {"type": ")";
    tool += kTypes[rng.UniformInt(4)];
    tool += R"(", "description": ")";
    const int64_t param_tokens = 8 + static_cast<int64_t>(rng.UniformInt(12));
    tool += Prose(rng, param_tokens);
    tool += "\"}";
    if (p == 0 || rng.UniformInt(2) == 0) {
      if (!required.empty()) required += ", ";
      required += "\"" + param + "\"";
    }
  }
  tool += R"(}, "required": [)" + required + "]}}}";
  return tool;
}

// Instructions and tool schemas of about `tokens` tokens; also returns the tool names.
std::string ToolDefinitions(Rng& rng, int64_t tokens, std::vector<std::string>* names) {
  request::BuiltinTokenizer tokenizer;
  std::string text = Prose(rng, 80) + "\n\nYou may call these tools:\n";
  int64_t total = static_cast<int64_t>(tokenizer.Encode(text).size());
  while (total < tokens) {
    names->push_back(Words(rng, 3));
    std::string tool = ToolSchema(rng, names->back()) + "\n";
    total += static_cast<int64_t>(tokenizer.Encode(tool).size());  // "\n" ends every piece
    text += tool;
  }
  return text;
}

class Agent final : public SessionWorkload {
 public:
  Agent(const WorkloadOptions& options, const AgentConfig& config, uint64_t seed)
      : SessionWorkload(options, config.steps_per_trajectory, config.tool_latency_mean_s, seed),
        num_tenants_(options.num_tenants),
        config_(config) {
    for (int i = 0; i < config.num_agent_types; ++i) {
      Rng rng(StreamSeed(seed, kToolsSalt, static_cast<uint64_t>(i)));
      tool_names_.emplace_back();
      tool_definitions_.push_back(
          ToolDefinitions(rng, config.tool_definition_tokens, &tool_names_.back()));
    }
  }

 private:
  void Begin(Session& session) override {
    const uint64_t type = session.rng.UniformInt(tool_definitions_.size());
    session.tenant = TenantName(type, num_tenants_);
    session.max_tokens = config_.step_max_tokens;
    session.messages.push_back({"system", tool_definitions_[type]});
    session.messages.push_back({"user", Prose(session.rng, config_.task_tokens)});
    session.kind = type;
  }

  void Continue(Session& session, std::string_view answer) override {
    session.messages.push_back({"assistant", std::string(answer)});
    const std::vector<std::string>& names = tool_names_[session.kind];
    const std::string& tool = names[session.rng.UniformInt(names.size())];
    std::string result = R"({"tool": ")" + tool + R"(", "status": "ok", "output": ")";
    result +=
        Prose(session.rng, std::max<int64_t>(config_.tool_result_tokens - kResultWrapperTokens, 1));
    result += "\"}";
    session.messages.push_back({"tool", std::move(result)});
  }

  const int num_tenants_;
  const AgentConfig config_;
  std::vector<std::string> tool_definitions_;
  std::vector<std::vector<std::string>> tool_names_;
};

}  // namespace

absl::StatusOr<AgentConfig> AgentConfigFromParams(const WorkloadParams& params) {
  AgentConfig config;
  ParamReader reader("agent", params);
  reader.Int("agent_types", 1, kMaxCount, &config.num_agent_types);
  reader.Int("tool_definition_tokens", 1, kMaxPieceTokens, &config.tool_definition_tokens);
  reader.Int("task_tokens", 1, kMaxPieceTokens, &config.task_tokens);
  reader.Int("tool_result_tokens", 1, kMaxPieceTokens, &config.tool_result_tokens);
  reader.Int("steps_per_trajectory", 1, kMaxCount, &config.steps_per_trajectory);
  reader.Int("step_max_tokens", 1, kMaxPieceTokens, &config.step_max_tokens);
  reader.Double("tool_latency_mean_s", 0, 1e6, &config.tool_latency_mean_s);
  reader.Require(config.num_agent_types * config.tool_definition_tokens <= kMaxGeneratedTokens,
                 "agent_types", "agent_types x tool_definition_tokens must be at most 1e8");
  if (absl::Status status = reader.Finish(); !status.ok()) return status;
  return config;
}

std::unique_ptr<Workload> MakeAgent(const WorkloadOptions& options, const AgentConfig& config,
                                    uint64_t seed) {
  return std::make_unique<Agent>(options, config, seed);
}

}  // namespace warmroute::workload
