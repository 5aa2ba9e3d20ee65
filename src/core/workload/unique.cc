// unique: no shared prefixes at all — the negative control, where prefix-aware routing can gain
// nothing and must not lose to plain load balancing.
//
// Shape (completions, so the rendered prompt itself starts with the unique part; a chat template
// would put a common header of about 5 tokens, less than one 16-token KV block, in front):
//   - prompt_tokens = 1,000 tokens per prompt: long enough that prefill cost is visible, as in
//     a support-bot request's cold case;
//   - the prompt opens with a request-unique word of 14 letters: the 64-bit bijective mix
//     Mix64(seed-derived base + index) spelled in base 26, so two prompts differ within their
//     first few characters and share no 64-character block; then pseudo-English prose;
//   - max_tokens = 100 (as support-bot, for comparable runs).
// Arrivals: Poisson at options.rate_per_s; options.num_requests requests. Tenant: by request,
// "t<index mod num_tenants>".
//
// Parameters (WorkloadOptions::params; KEY = default, range: meaning):
//   prompt_tokens = 1000, 1..1e6: tokens of each prompt (at least the 14-letter id's 4)
//   max_tokens = 100, 1..1e6: output length of every request
#include <string>

#include "core/workload/generators.h"
#include "core/workload/open_loop.h"
#include "core/workload/sampling.h"
#include "core/workload/text.h"
#include "core/workload/workload_params.h"

namespace warmroute::workload {
namespace {

constexpr uint64_t kIdSalt = 0x0701;
constexpr uint64_t kTextSalt = 0x0702;
constexpr int kIdLetters = 14;    // 26^14 > 2^64
constexpr int64_t kIdTokens = 4;  // 14 letters cut into chunks of 4 characters

class Unique final : public OpenLoopWorkload {
 public:
  Unique(const WorkloadOptions& options, const UniqueConfig& config, uint64_t seed)
      : OpenLoopWorkload(options.num_requests, options.rate_per_s, seed),
        options_(options),
        config_(config),
        id_base_(StreamSeed(seed, kIdSalt, 0)),
        rng_(StreamSeed(seed, kTextSalt, 0)) {}

 private:
  void Fill(int64_t index, WorkloadRequest& request) override {
    request.model = options_.model;
    request.tenant = TenantName(static_cast<uint64_t>(index), options_.num_tenants);
    request.endpoint = request::Endpoint::kCompletions;
    uint64_t id = Mix64(id_base_ + static_cast<uint64_t>(index));  // a bijection of index
    request.prompt.reserve(kIdLetters + static_cast<size_t>(config_.prompt_tokens) * 6 + 16);
    for (int i = 0; i < kIdLetters; ++i) {
      request.prompt.push_back(static_cast<char>('a' + id % 26));
      id /= 26;
    }
    AppendProse(rng_, std::max<int64_t>(config_.prompt_tokens - kIdTokens, 1), &request.prompt);
    request.max_tokens = config_.max_tokens;
  }

  const WorkloadOptions options_;
  const UniqueConfig config_;
  const uint64_t id_base_;
  Rng rng_;
};

}  // namespace

absl::StatusOr<UniqueConfig> UniqueConfigFromParams(const WorkloadParams& params) {
  UniqueConfig config;
  ParamReader reader("unique", params);
  reader.Int("prompt_tokens", 1, kMaxPieceTokens, &config.prompt_tokens);
  reader.Int("max_tokens", 1, kMaxPieceTokens, &config.max_tokens);
  if (absl::Status status = reader.Finish(); !status.ok()) return status;
  return config;
}

std::unique_ptr<Workload> MakeUnique(const WorkloadOptions& options, const UniqueConfig& config,
                                     uint64_t seed) {
  return std::make_unique<Unique>(options, config, seed);
}

}  // namespace warmroute::workload
