// What the KV block manager reports about its cache, in the terms of vLLM's KV events
// (vllm.distributed.kv_events): blocks stored (with their token ids and parent), blocks removed,
// and the whole cache cleared. The emulator encodes these on the wire; a router's prefix index
// can consume them.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace warmroute::engine {

struct KvEvent {
  enum class Kind { kBlockStored, kBlockRemoved, kAllBlocksCleared };
  Kind kind = Kind::kBlockStored;
  // kBlockStored: consecutive blocks of one sequence, parent first; kBlockRemoved: any blocks.
  std::vector<uint64_t> block_hashes;
  // kBlockStored: the hash of the block before block_hashes[0], or none for a first block.
  std::optional<uint64_t> parent_block_hash;
  // kBlockStored: the tokens of all stored blocks (block_hashes.size() * block_size of them).
  std::vector<int32_t> token_ids;
  int block_size = 0;
};

}  // namespace warmroute::engine
