// multi-turn: chat sessions whose history grows turn by turn — the case where a session's own
// previous turns (including the engine's generated answers) are the prefix to reuse.
//
// Shape (chat), per session:
//   - a system prompt: one of num_system_prompts = 4 prompts of system_prompt_tokens = 1,000
//     tokens, chosen uniformly by session (our choice: a chat product has a few assistants'
//     instructions, shorter than support-bot's policies);
//   - turns_per_session = 5 turns; turn k sends the system prompt, every earlier user message
//     and answer, and a new user message of U[min_user_tokens, max_user_tokens] = 100..300
//     tokens; max_tokens = answer_tokens = 200;
//   - turn k+1 is released by OnResponse for turn k, with the real answer appended as the
//     assistant message (so the engine's cached generated blocks can hit), at the response time
//     plus an exponential think time of mean think_time_mean_s = 5 s (our choice: a reader's
//     pause between chat turns).
// Sessions start open-loop at Poisson arrivals of options.rate_per_s. options.num_requests
// counts all turns: ceil(num_requests / 5) sessions, the last one possibly shorter.
// Tenant: by session, "t<session mod num_tenants>".
//
// Parameters (WorkloadOptions::params; KEY = default, range: meaning):
//   turns_per_session = 5, 1..1e6: turns of each session (the last session may be shorter)
//   system_prompts = 4, 1..1e6: number of distinct system prompts (num_system_prompts)
//   system_prompt_tokens = 1000, 1..1e6: tokens of each system prompt
//   min_user_tokens = 100, 1..1e6: shortest user message
//   max_user_tokens = 300, min_user_tokens..1e6: longest user message
//   answer_tokens = 200, 1..1e6: max_tokens of every turn
//   think_time_mean_s = 5.0, 0..1e6: mean think time between a response and the next turn
// system_prompts x system_prompt_tokens is at most 1e8.
#include <string>
#include <utility>
#include <vector>

#include "core/workload/generators.h"
#include "core/workload/sampling.h"
#include "core/workload/session_workload.h"
#include "core/workload/text.h"
#include "core/workload/workload_params.h"

namespace warmroute::workload {
namespace {

constexpr uint64_t kPromptSalt = 0x3101;

class MultiTurn final : public SessionWorkload {
 public:
  MultiTurn(const WorkloadOptions& options, const MultiTurnConfig& config, uint64_t seed)
      : SessionWorkload(options, config.turns_per_session, config.think_time_mean_s, seed),
        num_tenants_(options.num_tenants),
        config_(config) {
    for (int i = 0; i < config.num_system_prompts; ++i) {
      Rng rng(StreamSeed(seed, kPromptSalt, static_cast<uint64_t>(i)));
      system_prompts_.push_back(Document(rng, config.system_prompt_tokens));
    }
  }

 private:
  void Begin(Session& session) override {
    session.tenant = TenantName(session.index, num_tenants_);
    session.max_tokens = config_.answer_tokens;
    const uint64_t prompt = session.rng.UniformInt(system_prompts_.size());
    session.messages.push_back({"system", system_prompts_[prompt]});
    session.messages.push_back({"user", UserTurn(session.rng)});
  }

  void Continue(Session& session, std::string_view answer) override {
    session.messages.push_back({"assistant", std::string(answer)});
    session.messages.push_back({"user", UserTurn(session.rng)});
  }

  std::string UserTurn(Rng& rng) const {
    const uint64_t spread =
        static_cast<uint64_t>(config_.max_user_tokens - config_.min_user_tokens + 1);
    return Prose(rng, config_.min_user_tokens + static_cast<int64_t>(rng.UniformInt(spread)));
  }

  const int num_tenants_;
  const MultiTurnConfig config_;
  std::vector<std::string> system_prompts_;
};

}  // namespace

absl::StatusOr<MultiTurnConfig> MultiTurnConfigFromParams(const WorkloadParams& params) {
  MultiTurnConfig config;
  ParamReader reader("multi-turn", params);
  reader.Int("turns_per_session", 1, kMaxCount, &config.turns_per_session);
  reader.Int("system_prompts", 1, kMaxCount, &config.num_system_prompts);
  reader.Int("system_prompt_tokens", 1, kMaxPieceTokens, &config.system_prompt_tokens);
  reader.Int("min_user_tokens", 1, kMaxPieceTokens, &config.min_user_tokens);
  reader.Int("max_user_tokens", 1, kMaxPieceTokens, &config.max_user_tokens);
  reader.Int("answer_tokens", 1, kMaxPieceTokens, &config.answer_tokens);
  reader.Double("think_time_mean_s", 0, 1e6, &config.think_time_mean_s);
  reader.Require(config.min_user_tokens <= config.max_user_tokens, "max_user_tokens",
                 "min_user_tokens must not exceed max_user_tokens");
  reader.Require(config.num_system_prompts * config.system_prompt_tokens <= kMaxGeneratedTokens,
                 "system_prompts", "system_prompts x system_prompt_tokens must be at most 1e8");
  if (absl::Status status = reader.Finish(); !status.ok()) return status;
  return config;
}

std::unique_ptr<Workload> MakeMultiTurn(const WorkloadOptions& options,
                                        const MultiTurnConfig& config, uint64_t seed) {
  return std::make_unique<MultiTurn>(options, config, seed);
}

}  // namespace warmroute::workload
