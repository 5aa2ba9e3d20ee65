// The built-in generators, each with its shape parameters. MakeWorkload (workload.h) builds them
// by name with these defaults; tests and tools may build them with other shapes. Each generator's
// .cc file opens with a block comment: its shape, parameters, defaults and where they come from.
//
// Every generator reads from WorkloadOptions: model, num_requests, rate_per_s and num_tenants
// (trace:FILE reads trace_speed and jitter_s instead of rate_per_s). Options are validated by
// MakeWorkload; these factories REQUIRE valid options and configs.
//
// <Name>ConfigFromParams turns WorkloadOptions::params into a config: the defaults below with
// each given key applied (keys, ranges and meaning in the generator's .cc block comment);
// InvalidArgument naming the key for an unknown key or a value out of range.
//
// Thread-safety: the factories are pure; the workloads have one owner.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "core/workload/workload.h"

namespace warmroute::workload {

// support-bot: S long system prompts with Zipf popularity, each request one of them plus a
// unique customer question. Chat: system + user.
struct SupportBotConfig {
  int num_system_prompts = 16;
  int64_t system_prompt_tokens = 3000;
  double zipf_exponent = 1.0;
  int64_t question_tokens = 50;
  int64_t max_tokens = 100;
};
absl::StatusOr<SupportBotConfig> SupportBotConfigFromParams(const WorkloadParams& params);
std::unique_ptr<Workload> MakeSupportBot(const WorkloadOptions& options,
                                         const SupportBotConfig& config, uint64_t seed);

// shared-prefix: SGLang's generated-shared-prefix benchmark. Completions:
// system prompt + "\n\n" + question.
struct SharedPrefixConfig {
  int num_groups = 64;
  int prompts_per_group = 16;  // used when options.num_requests == 0 (and by user_questions)
  int64_t system_prompt_tokens = 2048;
  int64_t question_tokens = 128;
  int64_t output_tokens = 256;
  // false: every request's question is new (SGLang). true: prompts_per_group users per group,
  // each with one question sent again and again (inference-perf's shared_prefix data, as llm-d's
  // benchmarks use it): the requests cycle through the groups x prompts_per_group prompts.
  bool user_questions = false;
};
// `defaults`: the config the parameters override (shared-prefix's, or llm-d's 73-capacity one);
// `workload` names it in errors.
absl::StatusOr<SharedPrefixConfig> SharedPrefixConfigFromParams(
    const WorkloadParams& params, const SharedPrefixConfig& defaults = {},
    std::string_view workload = "shared-prefix");
// llmd-73: llm-d's 73-capacity benchmark workload (llm-d/llm-d-kv-cache
// benchmarking/73-capacity/README.md, inference-perf `data: shared_prefix`): 150 groups of 5 users,
// a 6,000-token system prompt per group, a 1,200-token question per user, 1,000 output tokens.
// Resident set 150 x (6,000 + 5 x 1,200) = 1.8 M tokens: 73.2 % of 8 replicas of 307,328 tokens.
SharedPrefixConfig Llmd73Config();
std::unique_ptr<Workload> MakeSharedPrefix(const WorkloadOptions& options,
                                           const SharedPrefixConfig& config, uint64_t seed);

// multi-turn: chat sessions whose history grows turn by turn, closed loop per session.
struct MultiTurnConfig {
  int turns_per_session = 5;
  int num_system_prompts = 4;
  int64_t system_prompt_tokens = 1000;
  int64_t min_user_tokens = 100;
  int64_t max_user_tokens = 300;
  int64_t answer_tokens = 200;
  double think_time_mean_s = 5.0;
};
absl::StatusOr<MultiTurnConfig> MultiTurnConfigFromParams(const WorkloadParams& params);
std::unique_ptr<Workload> MakeMultiTurn(const WorkloadOptions& options,
                                        const MultiTurnConfig& config, uint64_t seed);

// agent: a long tool-definitions prefix per agent type plus a growing trajectory of model
// answers and tool results, closed loop per trajectory.
struct AgentConfig {
  int num_agent_types = 4;
  int64_t tool_definition_tokens = 6000;
  int64_t task_tokens = 150;
  int64_t tool_result_tokens = 300;
  int steps_per_trajectory = 8;
  int64_t step_max_tokens = 150;
  double tool_latency_mean_s = 1.0;
};
absl::StatusOr<AgentConfig> AgentConfigFromParams(const WorkloadParams& params);
std::unique_ptr<Workload> MakeAgent(const WorkloadOptions& options, const AgentConfig& config,
                                    uint64_t seed);

// unique: no shared prefixes at all, the negative control. Completions.
struct UniqueConfig {
  int64_t prompt_tokens = 1000;
  int64_t max_tokens = 100;
};
absl::StatusOr<UniqueConfig> UniqueConfigFromParams(const WorkloadParams& params);
std::unique_ptr<Workload> MakeUnique(const WorkloadOptions& options, const UniqueConfig& config,
                                     uint64_t seed);

}  // namespace warmroute::workload
