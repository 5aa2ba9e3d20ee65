// The prefix-caching KV block pool of one engine replica, with vLLM V1's semantics
// (vllm/v1/core/block_pool.py and kv_cache_manager.py). Internal to the engine model.
//
// The KV cache is num_blocks blocks of block_size tokens. Each block has a reference count (the
// running requests that use it) and, once all its tokens are computed, the hash of its token
// chain (request::ChainBlockHash). Cached blocks are found by hash. A block nobody references
// sits in the free queue: it can be handed out again, but while it keeps its hash a later
// request with the same prefix can still reuse it ("touch" takes it back out of the queue).
//
// Eviction rule (vLLM's): new blocks are taken from the head of the free queue, which is ordered
// least-recently-freed first; taking a block that holds a hash evicts it from the cache
// (kBlockRemoved). A request's blocks are freed in reverse order of position, so the tail of a
// sequence is evicted before its head — the head is the part other requests are likelier to
// share. A referenced block is never evicted.
//
// Duplicates: when two requests compute the same block concurrently, the first to cache it
// keeps the hash; the second's copy stays an ordinary uncached block (no second kBlockStored).
//
// Usage (one request's life; `hashes` are its full blocks' chained hashes):
//   KvBlockManager pool(/*num_blocks=*/1024, /*block_size=*/16);
//   std::vector<BlockId> blocks;
//   int64_t hit = pool.FindCachedPrefix(hashes, max_hit_blocks, &blocks);
//   if (!pool.Allocate(blocks, num_new_blocks, &blocks_out, &events)) { ... preempt / wait ... }
//   ... compute; then cache the blocks that became full:
//   pool.CacheFullBlocks(all_blocks, hashes, hit, num_full, tokens, &events);
//   pool.Free(all_blocks);   // the request finished; its blocks stay cached until evicted
//
// Invariants: every block is either referenced (ref > 0) or in the free queue, never both;
// the hash map holds exactly the blocks that carry a hash, and no two blocks carry one hash.
//
// Thread-safety: none; one owner.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/engine/cached_block_map.h"
#include "core/engine/kv_event.h"

namespace warmroute::engine {

using BlockId = int32_t;

class KvBlockManager {
 public:
  // REQUIRES: 0 < num_blocks < 2^30, block_size > 0.
  KvBlockManager(int64_t num_blocks, int block_size);
  KvBlockManager(const KvBlockManager&) = delete;
  KvBlockManager& operator=(const KvBlockManager&) = delete;

  // The number of leading `hashes` whose blocks are cached, at most max_blocks, stopping at the
  // first miss; appends those blocks' ids to *blocks. Changes nothing.
  int64_t FindCachedPrefix(std::span<const uint64_t> hashes, int64_t max_blocks,
                           std::vector<BlockId>* blocks) const;

  // Takes a reference on each of `cached` (blocks found by FindCachedPrefix) and on `num_new`
  // fresh blocks from the free queue's head, appending the fresh ids to *blocks (the cached ids
  // are the caller's already). Evicted hashes are reported in one kBlockRemoved event.
  // All or nothing: returns false and changes nothing when the free queue holds fewer than
  // num_new blocks plus the unreferenced blocks among `cached`. `cached` may view *blocks.
  bool Allocate(std::span<const BlockId> cached, int64_t num_new, std::vector<BlockId>* blocks,
                std::vector<KvEvent>* events);

  // Caches blocks [first, last) of one sequence, whose tokens are all computed: blocks[i] holds
  // tokens [i * block_size, (i + 1) * block_size) of `tokens` and has hash hashes[i]. Blocks
  // whose hash is already cached (by another block) are left uncached. Emits one kBlockStored
  // per run of consecutive newly cached blocks, with its parent (hashes[i - 1], none for i = 0).
  // REQUIRES: last <= blocks.size(), last <= hashes.size(), last * block_size <= tokens.size(),
  // the blocks in [first, last) are referenced and hold no hash.
  void CacheFullBlocks(std::span<const BlockId> blocks, std::span<const uint64_t> hashes,
                       int64_t first, int64_t last, std::span<const int32_t> tokens,
                       std::vector<KvEvent>* events);

  // Drops one reference from each of `blocks` (one request's, in sequence order). Blocks that
  // reach zero join the free queue's tail, last position first. They keep their hashes.
  // REQUIRES: every block is referenced (a double free crashes).
  void Free(std::span<const BlockId> blocks);

  // Forgets every cached hash (kAllBlocksCleared), like vLLM's reset_prefix_cache. Returns false,
  // changing nothing, while any block is referenced.
  bool Reset(std::vector<KvEvent>* events);

  int block_size() const { return block_size_; }
  int64_t num_blocks() const { return num_blocks_; }
  int64_t num_free_blocks() const { return num_free_; }
  int64_t num_used_blocks() const { return num_blocks_ - num_free_; }
  int64_t num_cached_blocks() const { return static_cast<int64_t>(cached_.size()); }
  // Bytes held by the pool's own structures (blocks and the prefix-cache map).
  size_t MemoryBytes() const;
  // Fraction of blocks referenced by requests, in [0, 1].
  double Usage() const;

  // Introspection, for tests and invariant checks.
  int32_t RefCount(BlockId block) const { return blocks_[block].ref; }
  std::optional<uint64_t> HashOf(BlockId block) const;
  // The free queue, head (next to evict) first.
  std::vector<BlockId> FreeQueue() const;
  // An empty string when every invariant holds, else a description of the first violation.
  std::string CheckInvariants() const;

 private:
  struct Block {
    int32_t ref = 0;
    BlockId prev = -1;  // free-queue links; the sentinel is index num_blocks_
    BlockId next = -1;
    bool has_hash = false;
    uint64_t hash = 0;
  };

  void PushBack(BlockId block);
  void Unlink(BlockId block);
  uint64_t HashOfBlock(BlockId block) const { return blocks_[block].hash; }

  int64_t num_blocks_;
  int block_size_;
  int64_t num_free_ = 0;
  std::vector<Block> blocks_;  // num_blocks_ + 1: the last is the free queue's sentinel
  CachedBlockMap cached_;      // hash -> the block holding it; blocks_[b].hash confirms a match
  std::vector<uint64_t> removed_scratch_;
};

}  // namespace warmroute::engine
