// support-bot: the canonical prefix-sharing case — a customer-support service whose requests
// each carry one of a few long system prompts (policies, instructions) and a short question.
//
// Shape (chat: one system message, one user message):
//   - num_system_prompts S = 16 system prompts of system_prompt_tokens = 3,000 tokens, generated
//     once per seed as documents (numbered rules and paragraphs of pseudo-English, text.h).
//     S system prompts of about 3,000 tokens each: 16 x 3,000 tokens
//     = 48k tokens of distinct prefixes, more than a small replica's share of a busy cache.
//   - Popularity: Zipf with zipf_exponent = 1.0 (P(i) ∝ 1/(i+1)), the classic Zipf law; with
//     S = 16 the most popular prompt gets 29.6% of the requests and the least 1.8%.
//   - A unique customer question of question_tokens = 50 tokens per request.
//   - max_tokens = 100: short answers (our choice: support replies of a few sentences).
//   - Arrivals: Poisson at options.rate_per_s; options.num_requests requests.
//   - Tenant: by system prompt, "t<i mod num_tenants>", so a tenant's requests share prefixes.
// Token counts are exact for content under the BuiltinTokenizer (text.h); the chat template adds
// a few tokens per message.
//
// Parameters (WorkloadOptions::params; KEY = default, range: meaning):
//   system_prompts = 16, 1..1e6: number of distinct system prompts (num_system_prompts)
//   system_prompt_tokens = 3000, 1..1e6: tokens of each system prompt
//   zipf_exponent = 1.0, 0..100: popularity skew over the prompts (0 = uniform)
//   question_tokens = 50, 1..1e6: tokens of each request's unique question
//   max_tokens = 100, 1..1e6: output length of every request
// system_prompts x system_prompt_tokens is at most 1e8 (the prompts are generated up front).
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

constexpr uint64_t kPromptSalt = 0x5b01;
constexpr uint64_t kRequestSalt = 0x5b02;

class SupportBot final : public OpenLoopWorkload {
 public:
  SupportBot(const WorkloadOptions& options, const SupportBotConfig& config, uint64_t seed)
      : OpenLoopWorkload(options.num_requests, options.rate_per_s, seed),
        options_(options),
        config_(config),
        zipf_(static_cast<size_t>(config.num_system_prompts), config.zipf_exponent),
        rng_(StreamSeed(seed, kRequestSalt, 0)) {
    for (int i = 0; i < config.num_system_prompts; ++i) {
      Rng rng(StreamSeed(seed, kPromptSalt, static_cast<uint64_t>(i)));
      system_prompts_.push_back(Document(rng, config.system_prompt_tokens));
    }
  }

 private:
  void Fill(int64_t, WorkloadRequest& request) override {
    const size_t prompt = zipf_.Sample(rng_);
    request.model = options_.model;
    request.tenant = TenantName(prompt, options_.num_tenants);
    request.endpoint = request::Endpoint::kChatCompletions;
    request.messages = {{"system", system_prompts_[prompt]},
                        {"user", Prose(rng_, config_.question_tokens)}};
    request.max_tokens = config_.max_tokens;
  }

  const WorkloadOptions options_;
  const SupportBotConfig config_;
  const ZipfSampler zipf_;
  Rng rng_;
  std::vector<std::string> system_prompts_;
};

}  // namespace

absl::StatusOr<SupportBotConfig> SupportBotConfigFromParams(const WorkloadParams& params) {
  SupportBotConfig config;
  ParamReader reader("support-bot", params);
  reader.Int("system_prompts", 1, kMaxCount, &config.num_system_prompts);
  reader.Int("system_prompt_tokens", 1, kMaxPieceTokens, &config.system_prompt_tokens);
  reader.Double("zipf_exponent", 0, 100, &config.zipf_exponent);
  reader.Int("question_tokens", 1, kMaxPieceTokens, &config.question_tokens);
  reader.Int("max_tokens", 1, kMaxPieceTokens, &config.max_tokens);
  reader.Require(config.num_system_prompts * config.system_prompt_tokens <= kMaxGeneratedTokens,
                 "system_prompts", "system_prompts x system_prompt_tokens must be at most 1e8");
  if (absl::Status status = reader.Finish(); !status.ok()) return status;
  return config;
}

std::unique_ptr<Workload> MakeSupportBot(const WorkloadOptions& options,
                                         const SupportBotConfig& config, uint64_t seed) {
  return std::make_unique<SupportBot>(options, config, seed);
}

}  // namespace warmroute::workload
