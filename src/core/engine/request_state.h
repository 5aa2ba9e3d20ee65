// The engine core's view of one request: its tokens (prompt, then generated output), how many
// of them have KV computed, the KV blocks it holds and the chained hashes of its full blocks.
// Internal to the engine model (vLLM V1's vllm/v1/request.py, reduced to what scheduling needs).
//
// Thread-safety: none; owned by one EngineCore.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/engine/kv_block_manager.h"

namespace warmroute::engine {

struct RequestState {
  uint64_t id = 0;
  uint64_t seed = 0;
  bool bare_start = false;  // EngineRequest::bare_start
  uint64_t root_hash = 0;
  int64_t num_prompt_tokens = 0;
  int64_t max_tokens = 0;
  // Prompt tokens followed by the tokens generated so far.
  std::vector<int32_t> tokens;
  // Tokens [0, num_computed) have KV in `blocks`. Reset to 0 by a preemption.
  int64_t num_computed = 0;
  std::vector<BlockId> blocks;
  // Blocks [0, num_cached_blocks) were found in the prefix cache or handed to
  // KvBlockManager::CacheFullBlocks.
  int64_t num_cached_blocks = 0;
  // Prompt tokens served from the prefix cache at the first admission; -1 before it.
  int64_t cached_tokens = -1;
  bool running = false;

  int64_t num_tokens() const { return static_cast<int64_t>(tokens.size()); }
  int64_t num_outputs() const { return num_tokens() - num_prompt_tokens; }

  // The hashes of the first `num_blocks` full blocks of `tokens`, computed on first use.
  // REQUIRES: num_blocks * block_size <= num_tokens().
  std::span<const uint64_t> BlockHashes(int64_t num_blocks, int block_size);

 private:
  std::vector<uint64_t> block_hashes_;
};

}  // namespace warmroute::engine
