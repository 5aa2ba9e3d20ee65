#include "sim/infinite_cache_bound.h"

#include <algorithm>

#include "core/request/block_hash.h"

namespace warmroute::sim {

int64_t InfiniteCacheBound::Observe(std::span<const int32_t> prompt, uint64_t root_hash,
                                    const engine::TokenGenerator& generator, uint64_t seed,
                                    int64_t max_tokens) {
  const int64_t n = static_cast<int64_t>(prompt.size());
  // Prompt plus every generated token but the last: the tokens whose KV the engine computes.
  scratch_.assign(prompt.begin(), prompt.end());
  for (int64_t i = 0; i + 1 < max_tokens; ++i) scratch_.push_back(generator.Token(seed, i));
  const std::vector<uint64_t> hashes = request::HashFullBlocks(scratch_, block_size_, root_hash);

  const int64_t max_hit_blocks = std::min<int64_t>((n - 1) / block_size_, hashes.size());
  int64_t hit_blocks = 0;
  while (hit_blocks < max_hit_blocks && seen_.contains(hashes[hit_blocks])) ++hit_blocks;
  const int64_t hits = hit_blocks * block_size_;

  seen_.insert(hashes.begin(), hashes.end());
  prompt_tokens_ += n;
  hit_tokens_ += hits;
  return hits;
}

}  // namespace warmroute::sim
