// The engine model of one replica: a vLLM V1-style engine core without I/O. It owns a
// prefix-caching KV block manager and a continuous-batching scheduler, and is advanced one
// scheduler step at a time by a driver — the emulator on real time, the simulator on virtual
// time. Each Step() decides the batch, applies it, and returns how long the step takes on the
// modelled GPU (timing_model.h) and the events it produced. The driver makes those events
// visible at (step start + duration), then calls Step() again while HasWork().
//
// Usage:
//   EngineCore core(config, *FindTimingProfile("tiny"), generator, /*seed=*/1);
//   absl::Status s =
//       core.Add({.id = 1, .prompt_tokens = ids, .max_tokens = 16, .root_hash = root});
//   while (core.HasWork()) {
//     StepOutput out = core.Step();
//     clock.Advance(out.duration);
//     for (const RequestEvent& e : out.events) ...;   // tokens, finishes, preemptions
//     for (const KvEvent& e : out.kv_events) ...;     // blocks stored / removed
//   }
//
// Thread-safety: none. One owner (a strand, or the simulator's loop) calls every method.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "common/clock.h"
#include "core/engine/kv_event.h"
#include "core/engine/timing_model.h"
#include "core/engine/token_generator.h"

namespace warmroute::engine {

struct EngineConfig {
  int block_size = 16;                    // tokens per KV block (vLLM default)
  int64_t num_gpu_blocks = 0;             // KV capacity in blocks. REQUIRES: > 0
  int64_t max_num_batched_tokens = 8192;  // token budget of one step (vLLM V1 default)
  int64_t max_num_seqs = 256;             // running sequences at most (vLLM default)
  int64_t max_model_len = 131072;         // prompt + output tokens at most
  bool enable_prefix_caching = true;
  // Fill StepOutput::kv_events. A driver that publishes no KV events (the simulator) turns this
  // off: building them copies every cached block's tokens.
  bool emit_kv_events = true;
};

// The largest limits an operator may set (the engine emulator's flags, the simulator's replica
// specs): far above what real engines are configured with (vLLM's defaults are 256 sequences,
// and a replica's KV cache holds a few million tokens at most), and small enough that the
// model's per-block and per-sequence tables are allocated up front without exhausting memory.
inline constexpr int64_t kMaxKvCapacityTokens = int64_t{1} << 26;  // 67,108,864
inline constexpr int64_t kMaxNumSeqs = 65536;
inline constexpr int64_t kMaxNumBatchedTokens = int64_t{1} << 24;
inline constexpr int64_t kMaxModelLen = int64_t{1} << 24;

// The config for `profile`: its capacity (or kv_capacity_tokens when > 0) and max_model_len.
EngineConfig DefaultEngineConfig(const TimingProfile& profile, int64_t kv_capacity_tokens = 0);

struct EngineRequest {
  uint64_t id = 0;                     // unique among the requests the core holds
  std::vector<int32_t> prompt_tokens;  // REQUIRES: non-empty
  int64_t max_tokens = 16;             // exactly this many tokens are generated. REQUIRES: >= 1
  uint64_t root_hash = 0;              // request::RootBlockHash(model, lora, cache_salt)
  uint64_t seed = 0;                   // generated-text seed (TokenGenerator)
  bool bare_start = false;             // output token 0 is a bare word (TokenGenerator)
};

struct RequestEvent {
  enum class Kind {
    kToken,      // a token was generated (output_index 0 is the first token)
    kFinished,   // the last token was generated; the request left the engine
    kPreempted,  // blocks ran out: the request was freed and will be recomputed later
  };
  Kind kind = Kind::kToken;
  uint64_t id = 0;
  int32_t token = -1;        // kToken
  int64_t output_index = 0;  // kToken: index of the token; kFinished: tokens generated
  int64_t prompt_tokens = 0;
  // Prompt tokens served from the prefix cache when the request was first scheduled (vLLM's
  // num_cached_tokens, kept across preemptions): usage.prompt_tokens_details.cached_tokens.
  // Set on kToken (index 0), kFinished and kPreempted.
  int64_t cached_tokens = 0;
};

struct StepOutput {
  Duration duration{0};
  StepShape shape;
  std::vector<RequestEvent> events;
  std::vector<KvEvent> kv_events;
};

// Cumulative counters and current gauges, in vLLM's terms.
struct EngineStats {
  int64_t num_running = 0;
  int64_t num_waiting = 0;
  double kv_cache_usage = 0;         // fraction of blocks in use by requests, [0, 1]
  int64_t prefix_cache_queries = 0;  // prompt tokens looked up in the prefix cache
  int64_t prefix_cache_hits = 0;     // of those, tokens found cached
  int64_t prompt_tokens = 0;         // prompt tokens of scheduled requests (first schedule)
  int64_t generation_tokens = 0;
  int64_t num_preemptions = 0;
  int64_t cached_blocks = 0;  // blocks holding a hash (in use or reusable)
};

class EngineCore {
 public:
  // `generator` must outlive the core.
  EngineCore(const EngineConfig& config, const TimingProfile& profile,
             const TokenGenerator& generator, uint64_t seed);
  ~EngineCore();
  EngineCore(const EngineCore&) = delete;
  EngineCore& operator=(const EngineCore&) = delete;

  // Queues a request (FCFS). InvalidArgument when prompt + max_tokens exceeds max_model_len or
  // could never fit in the whole KV capacity (it would wait forever); AlreadyExists for a
  // duplicate id.
  absl::Status Add(EngineRequest request);

  // Removes a waiting or running request and frees its blocks (its full blocks stay cached).
  // Returns false when the id is unknown (e.g. already finished).
  bool Abort(uint64_t id);

  // True while any request is waiting or running.
  bool HasWork() const;

  // Runs one scheduler step: running requests first (decode, or their next prefill chunk), then
  // waiting requests' prefill in FCFS order, within max_num_batched_tokens and max_num_seqs;
  // cached prefixes are skipped; when blocks run out the newest running request is preempted.
  // REQUIRES: HasWork().
  StepOutput Step();
  // The same step into *out, which is overwritten: its vectors are cleared and their capacity
  // reused, so a driver stepping many engines does not allocate per step.
  void Step(StepOutput* out);

  // Evicts every cached block no running request holds, emitting kAllBlocksCleared (vLLM's
  // /reset_prefix_cache). Returns false, changing nothing, while requests hold blocks.
  bool ResetPrefixCache(std::vector<KvEvent>* kv_events);

  EngineStats Stats() const;
  const EngineConfig& config() const;
  const TimingProfile& profile() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace warmroute::engine
