// shared-prefix: SGLang's "generated-shared-prefix" benchmark dataset (sglang bench_serving
// --dataset-name generated-shared-prefix), with its defaults:
//   --gsp-num-groups 64, --gsp-prompts-per-group 16, --gsp-system-prompt-len 2048,
//   --gsp-question-len 128, --gsp-output-len 256.
// Each group has one system prompt; each request is its group's system prompt, "\n\n" and a
// unique question, sent as a completions prompt (SGLang builds the same
// f"{system_prompt}\n\n{question}" text prompt). SGLang draws random token ids and decodes them;
// we write pseudo-English with exact BuiltinTokenizer counts (text.h) instead.
//
// Parameters (SharedPrefixConfig): num_groups = 64, prompts_per_group = 16,
// system_prompt_tokens = 2,048, question_tokens = 128, output_tokens = 256 (max_tokens).
// Count: options.num_requests requests, spread evenly over the groups (request k of the unshuffled
// list belongs to group k mod 64); 0 means num_groups x prompts_per_group = 1,024, SGLang's set —
// which num_requests = 1,024 also reproduces exactly.
// Order: the whole list shuffled deterministically from the seed (Fisher-Yates), so groups
// interleave, as SGLang shuffles its list unless --disable-shuffle.
// Arrivals: Poisson at options.rate_per_s. Tenant: by group, "t<g mod num_tenants>".
//
// Parameters (WorkloadOptions::params; KEY = default, range: meaning; SGLang's flag in brackets):
//   groups = 64, 1..1e6: number of groups, one system prompt each [--gsp-num-groups]
//   prompts_per_group = 16, 1..1e6: requests per group when num_requests = 0
//                                   [--gsp-prompts-per-group]
//   system_prompt_tokens = 2048, 1..1e6: tokens of each system prompt [--gsp-system-prompt-len]
//   question_tokens = 128, 1..1e6: tokens of each question [--gsp-question-len]
//   output_tokens = 256, 1..1e6: max_tokens of every request [--gsp-output-len]
//   user_questions = 0, 0..1: 1 = each group has prompts_per_group users, each with one fixed
//                   question; the requests cycle through those groups x prompts_per_group
//                   prompts in a shuffled order (from the seed; every pass the same order), so
//                   each prompt recurs every groups x prompts_per_group requests
//                   [inference-perf's shared_prefix data: the question is "cached per user"]
// groups x system_prompt_tokens and (with num_requests = 0) groups x prompts_per_group are at
// most 1e8.
//
// llmd-73 (Llmd73Config): these parameters with the defaults of llm-d's 73-capacity benchmark
// (llm-d/llm-d-kv-cache benchmarking/73-capacity/README.md: inference-perf `shared_prefix` with
// num_groups 150, num_prompts_per_group 5, system_prompt_len 6000, question_len 1200,
// output_len 1000): groups = 150, prompts_per_group = 5, system_prompt_tokens = 6000,
// question_tokens = 1200, output_tokens = 1000, user_questions = 1. Its resident set is
// 150 x (6,000 + 5 x 1,200) = 1.8 M tokens, 73.2 % of their 8 pods' 8 x 307,328 KV tokens.
#include <string>
#include <utility>
#include <vector>

#include "core/workload/generators.h"
#include "core/workload/open_loop.h"
#include "core/workload/sampling.h"
#include "core/workload/text.h"
#include "core/workload/workload_params.h"

namespace warmroute::workload {
namespace {

constexpr uint64_t kPromptSalt = 0x5f01;
constexpr uint64_t kOrderSalt = 0x5f02;
constexpr uint64_t kQuestionSalt = 0x5f03;

int64_t RequestCount(const WorkloadOptions& options, const SharedPrefixConfig& config) {
  if (options.num_requests > 0) return options.num_requests;
  return static_cast<int64_t>(config.num_groups) * config.prompts_per_group;
}

class SharedPrefix final : public OpenLoopWorkload {
 public:
  SharedPrefix(const WorkloadOptions& options, const SharedPrefixConfig& config, uint64_t seed)
      : OpenLoopWorkload(RequestCount(options, config), options.rate_per_s, seed),
        options_(options),
        config_(config),
        questions_(StreamSeed(seed, kQuestionSalt, 0)) {
    for (int g = 0; g < config.num_groups; ++g) {
      Rng rng(StreamSeed(seed, kPromptSalt, static_cast<uint64_t>(g)));
      system_prompts_.push_back(Document(rng, config.system_prompt_tokens) + "\n\n");
    }
    if (config.user_questions) {
      // One question per user; the list of (group, user) prompts is shuffled once and cycled.
      const int64_t users = static_cast<int64_t>(config.num_groups) * config.prompts_per_group;
      for (int64_t u = 0; u < users; ++u) {
        Rng rng(StreamSeed(seed, kQuestionSalt, static_cast<uint64_t>(u) + 1));
        user_questions_.push_back(Prose(rng, config.question_tokens));
        group_of_.push_back(static_cast<uint32_t>(u / config.prompts_per_group));
        user_of_.push_back(static_cast<uint32_t>(u));
      }
      Rng order(StreamSeed(seed, kOrderSalt, 0));
      for (size_t k = user_of_.size(); k > 1; --k) {
        const size_t j = order.UniformInt(k);
        std::swap(group_of_[k - 1], group_of_[j]);
        std::swap(user_of_[k - 1], user_of_[j]);
      }
      return;
    }
    const int64_t count = RequestCount(options, config);
    group_of_.resize(static_cast<size_t>(count));
    for (int64_t k = 0; k < count; ++k) {
      group_of_[static_cast<size_t>(k)] = static_cast<uint32_t>(k % config.num_groups);
    }
    Rng order(StreamSeed(seed, kOrderSalt, 0));
    for (size_t k = group_of_.size(); k > 1; --k) {
      std::swap(group_of_[k - 1], group_of_[order.UniformInt(k)]);
    }
  }

 private:
  void Fill(int64_t index, WorkloadRequest& request) override {
    const size_t slot = static_cast<size_t>(index) % group_of_.size();
    const uint32_t group = group_of_[slot];
    request.model = options_.model;
    request.tenant = TenantName(group, options_.num_tenants);
    request.endpoint = request::Endpoint::kCompletions;
    request.prompt.reserve(system_prompts_[group].size() +
                           static_cast<size_t>(config_.question_tokens) * 5);
    request.prompt = system_prompts_[group];
    if (config_.user_questions) {
      request.prompt += user_questions_[user_of_[slot]];
    } else {
      request.prompt += Prose(questions_, config_.question_tokens);
    }
    request.max_tokens = config_.output_tokens;
  }

  const WorkloadOptions options_;
  const SharedPrefixConfig config_;
  Rng questions_;
  std::vector<std::string> system_prompts_;  // each ends with "\n\n"
  std::vector<uint32_t> group_of_;  // request index (mod size) -> group, shuffled
  // user_questions: each user's question, and the user of each slot of group_of_.
  std::vector<std::string> user_questions_;
  std::vector<uint32_t> user_of_;
};

}  // namespace

SharedPrefixConfig Llmd73Config() {
  return {.num_groups = 150,
          .prompts_per_group = 5,
          .system_prompt_tokens = 6000,
          .question_tokens = 1200,
          .output_tokens = 1000,
          .user_questions = true};
}

absl::StatusOr<SharedPrefixConfig> SharedPrefixConfigFromParams(
    const WorkloadParams& params, const SharedPrefixConfig& defaults, std::string_view workload) {
  SharedPrefixConfig config = defaults;
  ParamReader reader(workload, params);
  int user_questions = config.user_questions ? 1 : 0;
  reader.Int("user_questions", 0, 1, &user_questions);
  config.user_questions = user_questions == 1;
  reader.Int("groups", 1, kMaxCount, &config.num_groups);
  reader.Int("prompts_per_group", 1, kMaxCount, &config.prompts_per_group);
  reader.Int("system_prompt_tokens", 1, kMaxPieceTokens, &config.system_prompt_tokens);
  reader.Int("question_tokens", 1, kMaxPieceTokens, &config.question_tokens);
  reader.Int("output_tokens", 1, kMaxPieceTokens, &config.output_tokens);
  reader.Require(config.num_groups * config.system_prompt_tokens <= kMaxGeneratedTokens, "groups",
                 "groups x system_prompt_tokens must be at most 1e8");
  reader.Require(
      static_cast<int64_t>(config.num_groups) * config.prompts_per_group <= kMaxGeneratedTokens,
      "prompts_per_group", "groups x prompts_per_group must be at most 1e8");
  reader.Require(!config.user_questions ||
                     static_cast<int64_t>(config.num_groups) * config.prompts_per_group *
                             config.question_tokens <=
                         kMaxGeneratedTokens,
                 "user_questions",
                 "groups x prompts_per_group x question_tokens must be at most 1e8");
  if (absl::Status status = reader.Finish(); !status.ok()) return status;
  return config;
}

std::unique_ptr<Workload> MakeSharedPrefix(const WorkloadOptions& options,
                                           const SharedPrefixConfig& config, uint64_t seed) {
  return std::make_unique<SharedPrefix>(options, config, seed);
}

}  // namespace warmroute::workload
