// The scheduler of vLLM V1 (vllm/v1/core/sched/scheduler.py, kv_cache_manager.py), one step at
// a time. vLLM V1 has no separate prefill and decode phases: every request has tokens
// (prompt + output) and num_computed tokens with KV; a step gives each scheduled request
// num_new = tokens - num_computed new tokens, capped by the step's token budget.
//
// One step:
//   1. Budget = max_num_batched_tokens (8192, vLLM V1's default with chunked prefill).
//   2. RUNNING requests in order: decode (1 token) or the next chunk of an unfinished prefill.
//      Slots that need new blocks are allocated; if the pool runs out, the LAST running request
//      is preempted (its blocks freed, num_computed = 0 — it will recompute prompt + output,
//      as vLLM V1's recompute preemption does — and it goes to the FRONT of the waiting queue),
//      and the allocation is retried; if the request preempted is the one being scheduled,
//      scheduling of running requests stops.
//   3. If nothing was preempted, WAITING requests in FCFS order while budget remains and fewer
//      than max_num_seqs run: the prefix cache gives the longest cached prefix of the request's
//      full-block hashes, capped at num_tokens - 1 tokens (vLLM always recomputes the last token
//      to get logits): cached = at most floor((n - 1) / block_size) * block_size. The rest,
//      capped by the budget, is this step's chunk. If its blocks cannot be allocated, waiting
//      requests are not looked at further (FCFS: no skipping ahead).
//      Prefix-cache stats count queries += num_tokens and hits += cached once per admission.
//   4. The batch's shape (prefill tokens, decoding sequences, context tokens) gives the step's
//      duration (timing_model.h). Then each scheduled request's num_computed advances; blocks
//      whose tokens are now all computed are cached (kBlockStored); a request whose tokens are
//      all computed samples one token (TokenGenerator); at max_tokens it finishes and frees its
//      blocks, which stay cached (generated blocks included) until evicted.

#include "core/engine/engine_core.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/rng.h"
#include "common/status.h"
#include "core/engine/kv_block_manager.h"
#include "core/engine/request_state.h"

namespace warmroute::engine {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

void CheckConfig(const EngineConfig& c) {
  if (c.block_size <= 0 || c.num_gpu_blocks <= 0 || c.max_num_batched_tokens <= 0 ||
      c.max_num_seqs <= 0 || c.max_model_len <= 0) {
    std::fprintf(stderr,
                 "EngineCore: invalid config (block_size %d, num_gpu_blocks %lld, "
                 "max_num_batched_tokens %lld, max_num_seqs %lld, max_model_len %lld)\n",
                 c.block_size, static_cast<long long>(c.num_gpu_blocks),
                 static_cast<long long>(c.max_num_batched_tokens),
                 static_cast<long long>(c.max_num_seqs), static_cast<long long>(c.max_model_len));
    std::abort();
  }
}

}  // namespace

EngineConfig DefaultEngineConfig(const TimingProfile& profile, int64_t kv_capacity_tokens) {
  EngineConfig config;
  const int64_t capacity =
      kv_capacity_tokens > 0 ? kv_capacity_tokens : profile.default_capacity_tokens;
  config.num_gpu_blocks = std::max<int64_t>(1, capacity / config.block_size);
  config.max_model_len = profile.max_model_len;
  return config;
}

class EngineCore::Impl {
 public:
  Impl(const EngineConfig& config, const TimingProfile& profile, const TokenGenerator& generator,
       uint64_t seed)
      : config_((CheckConfig(config), config)),
        profile_(profile),
        generator_(generator),
        rng_(seed),
        pool_(config.num_gpu_blocks, config.block_size) {
    running_.reserve(static_cast<size_t>(config.max_num_seqs));
    scheduled_.reserve(static_cast<size_t>(config.max_num_seqs));
  }

  absl::Status Add(EngineRequest request);
  bool Abort(uint64_t id);
  bool HasWork() const { return !running_.empty() || !waiting_.empty(); }
  void Step(StepOutput& out);
  bool ResetPrefixCache(std::vector<KvEvent>* kv_events) { return pool_.Reset(kv_events); }
  EngineStats Stats() const;
  const EngineConfig& config() const { return config_; }
  const TimingProfile& profile() const { return profile_; }

 private:
  struct Scheduled {
    RequestState* request;
    int64_t num_new;
  };

  // Allocates the blocks `r` needs to hold num_computed + num_new tokens.
  bool AllocateSlots(RequestState& r, int64_t num_new, std::vector<KvEvent>* kv_events);
  void Preempt(RequestState& r, StepOutput& out);
  void ScheduleRunning(StepOutput& out, int64_t& budget, bool& preempted);
  void ScheduleWaiting(StepOutput& out, int64_t& budget);
  // Advances one scheduled request after the step; returns true when it finished.
  bool Apply(const Scheduled& s, StepOutput& out);
  void CacheComputedBlocks(RequestState& r, std::vector<KvEvent>* kv_events);
  void FreeBlocks(RequestState& r);

  const EngineConfig config_;
  const TimingProfile& profile_;
  const TokenGenerator& generator_;
  Rng rng_;
  KvBlockManager pool_;
  absl::flat_hash_map<uint64_t, std::unique_ptr<RequestState>> requests_;
  std::vector<RequestState*> running_;
  std::deque<RequestState*> waiting_;
  std::vector<Scheduled> scheduled_;
  std::vector<BlockId> hit_scratch_;
  EngineStats stats_;

  // Where this step's KV events go: out.kv_events, or nowhere when the config emits none.
  std::vector<KvEvent>* KvEventsOf(StepOutput& out) const {
    return config_.emit_kv_events ? &out.kv_events : nullptr;
  }
};

absl::Status EngineCore::Impl::Add(EngineRequest request) {
  const int64_t prompt = static_cast<int64_t>(request.prompt_tokens.size());
  if (prompt == 0) return InvalidParam("prompt", "The prompt cannot be empty.");
  if (request.max_tokens < 1) {
    return InvalidParam(
        "max_tokens", absl::StrCat("max_tokens must be at least 1, got ", request.max_tokens, "."));
  }
  if (prompt > config_.max_model_len) {
    return InvalidParam("prompt", absl::StrCat("The prompt (length ", prompt,
                                               ") is longer than the maximum model length of ",
                                               config_.max_model_len, "."));
  }
  if (request.max_tokens > config_.max_model_len - prompt) {
    return InvalidParam(
        "max_tokens",
        absl::StrCat("'max_tokens' is too large: ", request.max_tokens,
                     ". This model's maximum context length is ", config_.max_model_len,
                     " tokens and your request has ", prompt, " input tokens (", request.max_tokens,
                     " > ", config_.max_model_len, " - ", prompt, ")."));
  }
  const int64_t blocks_needed = CeilDiv(prompt + request.max_tokens, config_.block_size);
  if (blocks_needed > config_.num_gpu_blocks) {
    const bool prompt_alone = CeilDiv(prompt, config_.block_size) > config_.num_gpu_blocks;
    return InvalidParam(
        prompt_alone ? "prompt" : "max_tokens",
        absl::StrCat("The request needs ", blocks_needed, " KV cache blocks (", prompt,
                     " prompt tokens + ", request.max_tokens,
                     " max_tokens) but the engine's KV cache holds only ", config_.num_gpu_blocks,
                     " blocks of ", config_.block_size, " tokens; it could never be scheduled."));
  }
  if (requests_.contains(request.id)) {
    return absl::AlreadyExistsError(
        absl::StrCat("request id ", request.id, " is already in the engine"));
  }
  auto state = std::make_unique<RequestState>();
  state->id = request.id;
  state->seed = request.seed;
  state->bare_start = request.bare_start;
  state->root_hash = request.root_hash;
  state->num_prompt_tokens = prompt;
  state->max_tokens = request.max_tokens;
  state->tokens = std::move(request.prompt_tokens);
  state->tokens.reserve(static_cast<size_t>(prompt + std::min<int64_t>(request.max_tokens, 4096)));
  waiting_.push_back(state.get());
  requests_.emplace(request.id, std::move(state));
  return absl::OkStatus();
}

bool EngineCore::Impl::Abort(uint64_t id) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return false;
  RequestState* r = it->second.get();
  if (r->running) {
    running_.erase(std::find(running_.begin(), running_.end(), r));
  } else {
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), r));
  }
  FreeBlocks(*r);
  requests_.erase(it);
  return true;
}

void EngineCore::Impl::FreeBlocks(RequestState& r) {
  pool_.Free(r.blocks);
  r.blocks.clear();
  r.num_cached_blocks = 0;
}

bool EngineCore::Impl::AllocateSlots(RequestState& r, int64_t num_new,
                                     std::vector<KvEvent>* kv_events) {
  const int64_t needed =
      CeilDiv(r.num_computed + num_new, config_.block_size) - static_cast<int64_t>(r.blocks.size());
  if (needed <= 0) return true;
  return pool_.Allocate({}, needed, &r.blocks, kv_events);
}

void EngineCore::Impl::Preempt(RequestState& r, StepOutput& out) {
  FreeBlocks(r);
  r.num_computed = 0;
  r.running = false;
  waiting_.push_front(&r);
  ++stats_.num_preemptions;
  out.events.push_back({.kind = RequestEvent::Kind::kPreempted,
                        .id = r.id,
                        .output_index = r.num_outputs(),
                        .prompt_tokens = r.num_prompt_tokens,
                        .cached_tokens = std::max<int64_t>(r.cached_tokens, 0)});
}

void EngineCore::Impl::ScheduleRunning(StepOutput& out, int64_t& budget, bool& preempted) {
  // A fleet's engines step in turn, so each running request's state is cold by its next step:
  // bring it in for the whole batch at once, then its token vector's end a few requests ahead.
  constexpr size_t kAhead = 4;
  for (const RequestState* r : running_) {
    __builtin_prefetch(r);
    __builtin_prefetch(reinterpret_cast<const char*>(r) + 64);
  }
  size_t index = 0;
  while (index < running_.size() && budget > 0) {
    if (index + kAhead < running_.size()) {
      const RequestState& ahead = *running_[index + kAhead];
      __builtin_prefetch(ahead.tokens.data() + ahead.tokens.size());
    }
    RequestState& r = *running_[index];
    const int64_t num_new = std::min(r.num_tokens() - r.num_computed, budget);
    if (num_new <= 0) {  // cannot happen: a running request always has a token to compute
      ++index;
      continue;
    }
    bool scheduled = false;
    while (true) {
      if (AllocateSlots(r, num_new, KvEventsOf(out))) {
        scheduled = true;
        break;
      }
      RequestState& victim = *running_.back();
      running_.pop_back();
      Preempt(victim, out);
      preempted = true;
      if (&victim == &r) break;
    }
    if (!scheduled) break;
    scheduled_.push_back({&r, num_new});
    budget -= num_new;
    ++index;
  }
}

void EngineCore::Impl::ScheduleWaiting(StepOutput& out, int64_t& budget) {
  const int bs = config_.block_size;
  while (!waiting_.empty() && budget > 0 &&
         static_cast<int64_t>(running_.size()) < config_.max_num_seqs) {
    RequestState& r = *waiting_.front();
    const int64_t n = r.num_tokens();
    hit_scratch_.clear();
    int64_t hit_blocks = 0;
    if (config_.enable_prefix_caching) {
      const int64_t max_hit_blocks = (n - 1) / bs;
      hit_blocks =
          pool_.FindCachedPrefix(r.BlockHashes(max_hit_blocks, bs), max_hit_blocks, &hit_scratch_);
    }
    const int64_t cached = hit_blocks * bs;
    const int64_t num_new = std::min(n - cached, budget);
    const int64_t new_blocks = CeilDiv(cached + num_new, bs) - hit_blocks;
    if (!pool_.Allocate(hit_scratch_, new_blocks, &hit_scratch_, KvEventsOf(out))) break;
    waiting_.pop_front();
    r.blocks.assign(hit_scratch_.begin(), hit_scratch_.end());
    r.num_computed = cached;
    r.num_cached_blocks = hit_blocks;
    r.running = true;
    running_.push_back(&r);
    if (config_.enable_prefix_caching) {
      stats_.prefix_cache_queries += n;
      stats_.prefix_cache_hits += cached;
    }
    if (r.cached_tokens < 0) {
      r.cached_tokens = cached;
      stats_.prompt_tokens += r.num_prompt_tokens;
    }
    scheduled_.push_back({&r, num_new});
    budget -= num_new;
  }
}

void EngineCore::Impl::CacheComputedBlocks(RequestState& r, std::vector<KvEvent>* kv_events) {
  if (!config_.enable_prefix_caching) return;
  const int64_t full = r.num_computed / config_.block_size;
  if (full <= r.num_cached_blocks) return;
  pool_.CacheFullBlocks(r.blocks, r.BlockHashes(full, config_.block_size), r.num_cached_blocks,
                        full, r.tokens, kv_events);
  r.num_cached_blocks = full;
}

bool EngineCore::Impl::Apply(const Scheduled& s, StepOutput& out) {
  RequestState& r = *s.request;
  r.num_computed += s.num_new;
  CacheComputedBlocks(r, KvEventsOf(out));
  if (r.num_computed < r.num_tokens()) return false;  // a prefill chunk: no token yet
  const int64_t index = r.num_outputs();
  const int32_t token = generator_.Token(r.seed, index, r.bare_start);
  r.tokens.push_back(token);
  ++stats_.generation_tokens;
  const int64_t cached = std::max<int64_t>(r.cached_tokens, 0);
  out.events.push_back({.kind = RequestEvent::Kind::kToken,
                        .id = r.id,
                        .token = token,
                        .output_index = index,
                        .prompt_tokens = r.num_prompt_tokens,
                        .cached_tokens = index == 0 ? cached : 0});
  if (r.num_outputs() < r.max_tokens) return false;
  out.events.push_back({.kind = RequestEvent::Kind::kFinished,
                        .id = r.id,
                        .output_index = r.num_outputs(),
                        .prompt_tokens = r.num_prompt_tokens,
                        .cached_tokens = cached});
  FreeBlocks(r);
  r.running = false;
  return true;
}

void EngineCore::Impl::Step(StepOutput& out) {
  out.duration = Duration(0);
  out.shape = StepShape{};
  out.events.clear();
  out.kv_events.clear();
  if (!HasWork()) return;
  scheduled_.clear();
  int64_t budget = config_.max_num_batched_tokens;
  bool preempted = false;
  ScheduleRunning(out, budget, preempted);
  // As vLLM: after a preemption the pool is full; admitting new work would only thrash.
  if (!preempted) ScheduleWaiting(out, budget);

  for (const Scheduled& s : scheduled_) {
    const RequestState& r = *s.request;
    const bool decode =
        r.num_outputs() > 0 && s.num_new == 1 && r.num_computed + 1 == r.num_tokens();
    if (decode) {
      ++out.shape.decode_seqs;
    } else {
      out.shape.prefill_tokens += s.num_new;
    }
    out.shape.context_tokens += r.num_computed + s.num_new;
  }
  out.duration = StepDuration(profile_, out.shape, &rng_);

  out.events.reserve(out.events.size() + scheduled_.size() + 8);
  bool any_finished = false;
  for (const Scheduled& s : scheduled_) any_finished |= Apply(s, out);
  if (any_finished) {
    std::erase_if(running_, [](const RequestState* r) { return !r->running; });
    for (const Scheduled& s : scheduled_) {
      if (!s.request->running && s.request->num_outputs() >= s.request->max_tokens) {
        requests_.erase(s.request->id);
      }
    }
  }
}

EngineStats EngineCore::Impl::Stats() const {
  EngineStats stats = stats_;
  stats.num_running = static_cast<int64_t>(running_.size());
  stats.num_waiting = static_cast<int64_t>(waiting_.size());
  stats.kv_cache_usage = pool_.Usage();
  stats.cached_blocks = pool_.num_cached_blocks();
  return stats;
}

EngineCore::EngineCore(const EngineConfig& config, const TimingProfile& profile,
                       const TokenGenerator& generator, uint64_t seed)
    : impl_(std::make_unique<Impl>(config, profile, generator, seed)) {}
EngineCore::~EngineCore() = default;
absl::Status EngineCore::Add(EngineRequest request) { return impl_->Add(std::move(request)); }
bool EngineCore::Abort(uint64_t id) { return impl_->Abort(id); }
bool EngineCore::HasWork() const { return impl_->HasWork(); }
StepOutput EngineCore::Step() {
  StepOutput out;
  impl_->Step(out);
  return out;
}
void EngineCore::Step(StepOutput* out) { impl_->Step(*out); }
bool EngineCore::ResetPrefixCache(std::vector<KvEvent>* kv_events) {
  return impl_->ResetPrefixCache(kv_events);
}
EngineStats EngineCore::Stats() const { return impl_->Stats(); }
const EngineConfig& EngineCore::config() const { return impl_->config(); }
const TimingProfile& EngineCore::profile() const { return impl_->profile(); }

}  // namespace warmroute::engine
