// The infinite-cache bound on prefix-cache hits for a request stream: the hit rate a single
// engine with unlimited KV memory would reach, i.e. "every repeated block hits".
//
// Rule: requests are taken in arrival order. A request of n prompt tokens hits its longest run
// of leading full blocks (engine block hashes, chained, so a block's hash stands for its whole
// prefix) that any earlier request held — its prompt blocks, and the blocks of its prompt plus
// generated tokens (all but the last generated token, whose KV an engine never computes) —
// capped, like the engine, at floor((n - 1) / block_size) blocks, because the last prompt token
// is always computed. Earlier requests count even if they have not finished yet: this is an
// upper bound, not a schedule.
//
// Memory: one 8-byte hash (plus hash-table slack) per distinct block of the whole stream — about
// 1 GB for a million unique 1,000-token requests, so `warmroute sim --no-bounds` skips it.
//
// Usage:
//   InfiniteCacheBound bound(/*block_size=*/16);
//   bound.Observe(prompt_tokens, root_hash, generator, seed, max_tokens);
//   double rate = bound.HitRate();
//
// Thread-safety: none; one owner.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "core/engine/token_generator.h"

namespace warmroute::sim {

class InfiniteCacheBound {
 public:
  explicit InfiniteCacheBound(int block_size) : block_size_(block_size) {}

  // Counts the hits of one request (the next in arrival order), then remembers its blocks.
  // Returns the request's hit tokens. REQUIRES: !prompt.empty(), max_tokens >= 1.
  int64_t Observe(std::span<const int32_t> prompt, uint64_t root_hash,
                  const engine::TokenGenerator& generator, uint64_t seed, int64_t max_tokens);

  int64_t prompt_tokens() const { return prompt_tokens_; }
  int64_t hit_tokens() const { return hit_tokens_; }
  double HitRate() const {
    return prompt_tokens_ > 0 ? static_cast<double>(hit_tokens_) / prompt_tokens_ : 0;
  }
  size_t distinct_blocks() const { return seen_.size(); }

 private:
  const int block_size_;
  absl::flat_hash_set<uint64_t> seen_;
  std::vector<int32_t> scratch_;
  int64_t prompt_tokens_ = 0;
  int64_t hit_tokens_ = 0;
};

}  // namespace warmroute::sim
