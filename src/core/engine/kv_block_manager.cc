#include "core/engine/kv_block_manager.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace warmroute::engine {
namespace {

// Broken invariants crash loudly.
void Check(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "KvBlockManager: invariant violated: %s\n", what);
    std::abort();
  }
}

// Hashes are looked up and blocks visited this many positions ahead of their use: every engine
// of a simulated fleet has its own pool, so at fleet scale each of those accesses is a cache miss.
constexpr int64_t kPrefetchAhead = 8;

int64_t CheckedNumBlocks(int64_t num_blocks) {
  Check(num_blocks > 0 && num_blocks < (int64_t{1} << 30), "num_blocks out of range");
  return num_blocks;
}

}  // namespace

KvBlockManager::KvBlockManager(int64_t num_blocks, int block_size)
    : num_blocks_(CheckedNumBlocks(num_blocks)), block_size_(block_size), cached_(num_blocks) {
  Check(block_size > 0, "block_size must be positive");
  blocks_.resize(static_cast<size_t>(num_blocks) + 1);
  Block& sentinel = blocks_[num_blocks_];
  sentinel.prev = sentinel.next = static_cast<BlockId>(num_blocks_);
  for (BlockId b = 0; b < num_blocks_; ++b) PushBack(b);
}

void KvBlockManager::PushBack(BlockId block) {
  const BlockId sentinel = static_cast<BlockId>(num_blocks_);
  const BlockId tail = blocks_[sentinel].prev;
  blocks_[block].prev = tail;
  blocks_[block].next = sentinel;
  blocks_[tail].next = block;
  blocks_[sentinel].prev = block;
  ++num_free_;
}

void KvBlockManager::Unlink(BlockId block) {
  Block& b = blocks_[block];
  blocks_[b.prev].next = b.next;
  blocks_[b.next].prev = b.prev;
  b.prev = b.next = -1;
  --num_free_;
}

int64_t KvBlockManager::FindCachedPrefix(std::span<const uint64_t> hashes, int64_t max_blocks,
                                         std::vector<BlockId>* blocks) const {
  int64_t found = 0;
  const int64_t limit = std::min<int64_t>(max_blocks, static_cast<int64_t>(hashes.size()));
  for (int64_t i = 0; i < std::min(limit, kPrefetchAhead); ++i) cached_.Prefetch(hashes[i]);
  const auto hash_of = [this](BlockId b) { return HashOfBlock(b); };
  while (found < limit) {
    if (found + kPrefetchAhead < limit) cached_.Prefetch(hashes[found + kPrefetchAhead]);
    const BlockId block = cached_.Find(hashes[found], hash_of);
    if (block == CachedBlockMap::kNone) break;
    blocks->push_back(block);
    ++found;
  }
  return found;
}

bool KvBlockManager::Allocate(std::span<const BlockId> cached, int64_t num_new,
                              std::vector<BlockId>* blocks, std::vector<KvEvent>* events) {
  int64_t needed = num_new;
  for (BlockId b : cached) needed += blocks_[b].ref == 0 ? 1 : 0;
  if (needed > num_free_) return false;
  for (BlockId b : cached) {
    if (blocks_[b].ref++ == 0) Unlink(b);
  }
  removed_scratch_.clear();
  const BlockId sentinel = static_cast<BlockId>(num_blocks_);
  // Two passes: walking the free queue is a chain of dependent loads, so the map slots of the
  // evicted hashes are prefetched during the walk and erased after it.
  const size_t first = blocks->size();
  for (int64_t i = 0; i < num_new; ++i) {
    const BlockId b = blocks_[sentinel].next;
    Unlink(b);
    Block& block = blocks_[b];
    if (block.has_hash) cached_.Prefetch(block.hash);
    block.ref = 1;
    blocks->push_back(b);
  }
  for (size_t i = first; i < blocks->size(); ++i) {
    Block& block = blocks_[(*blocks)[i]];
    if (!block.has_hash) continue;
    cached_.Erase(block.hash, (*blocks)[i]);
    if (events != nullptr) removed_scratch_.push_back(block.hash);
    block.has_hash = false;
    block.hash = 0;
  }
  if (!removed_scratch_.empty() && events != nullptr) {
    KvEvent& event = events->emplace_back();
    event.kind = KvEvent::Kind::kBlockRemoved;
    event.block_hashes = removed_scratch_;
    event.block_size = block_size_;
  }
  return true;
}

void KvBlockManager::CacheFullBlocks(std::span<const BlockId> blocks,
                                     std::span<const uint64_t> hashes, int64_t first, int64_t last,
                                     std::span<const int32_t> tokens,
                                     std::vector<KvEvent>* events) {
  Check(first >= 0 && last <= static_cast<int64_t>(blocks.size()) &&
            last <= static_cast<int64_t>(hashes.size()) &&
            last * block_size_ <= static_cast<int64_t>(tokens.size()),
        "CacheFullBlocks range out of bounds");
  KvEvent* run = nullptr;  // the kBlockStored event being extended, if the previous block was new
  const auto hash_of = [this](BlockId b) { return HashOfBlock(b); };
  for (int64_t i = first; i < std::min(last, first + kPrefetchAhead); ++i) {
    cached_.Prefetch(hashes[i]);
  }
  for (int64_t i = first; i < last; ++i) {
    if (i + kPrefetchAhead < last) {
      cached_.Prefetch(hashes[i + kPrefetchAhead]);
      __builtin_prefetch(&blocks_[blocks[i + kPrefetchAhead]]);
    }
    Block& block = blocks_[blocks[i]];
    Check(block.ref > 0, "caching an unreferenced block");
    Check(!block.has_hash, "caching a block that already holds a hash");
    if (cached_.Insert(hashes[i], blocks[i], hash_of) != blocks[i]) {
      // computed concurrently by another request: keep the existing block
      run = nullptr;
      continue;
    }
    block.has_hash = true;
    block.hash = hashes[i];
    if (events == nullptr) continue;
    if (run == nullptr) {
      run = &events->emplace_back();
      run->kind = KvEvent::Kind::kBlockStored;
      run->block_size = block_size_;
      if (i > 0) run->parent_block_hash = hashes[i - 1];
    }
    run->block_hashes.push_back(hashes[i]);
    const auto begin = tokens.begin() + i * block_size_;
    run->token_ids.insert(run->token_ids.end(), begin, begin + block_size_);
  }
}

void KvBlockManager::Free(std::span<const BlockId> blocks) {
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    Block& block = blocks_[*it];
    Check(block.ref > 0, "double free of a KV block");
    if (--block.ref == 0) PushBack(*it);
  }
}

bool KvBlockManager::Reset(std::vector<KvEvent>* events) {
  if (num_free_ != num_blocks_) return false;
  cached_.Clear([this](BlockId block) {
    blocks_[block].has_hash = false;
    blocks_[block].hash = 0;
  });
  if (events != nullptr) {
    KvEvent& event = events->emplace_back();
    event.kind = KvEvent::Kind::kAllBlocksCleared;
    event.block_size = block_size_;
  }
  return true;
}

double KvBlockManager::Usage() const {
  return static_cast<double>(num_used_blocks()) / static_cast<double>(num_blocks_);
}

size_t KvBlockManager::MemoryBytes() const {
  return sizeof(*this) + blocks_.capacity() * sizeof(Block) + cached_.allocated_bytes() +
         removed_scratch_.capacity() * sizeof(uint64_t);
}

std::optional<uint64_t> KvBlockManager::HashOf(BlockId block) const {
  if (!blocks_[block].has_hash) return std::nullopt;
  return blocks_[block].hash;
}

std::vector<BlockId> KvBlockManager::FreeQueue() const {
  std::vector<BlockId> queue;
  queue.reserve(static_cast<size_t>(num_free_));
  const BlockId sentinel = static_cast<BlockId>(num_blocks_);
  for (BlockId b = blocks_[sentinel].next; b != sentinel; b = blocks_[b].next) queue.push_back(b);
  return queue;
}

std::string KvBlockManager::CheckInvariants() const {
  const std::vector<BlockId> queue = FreeQueue();
  if (static_cast<int64_t>(queue.size()) != num_free_) return "free queue length != num_free";
  std::vector<bool> in_queue(static_cast<size_t>(num_blocks_), false);
  for (BlockId b : queue) {
    if (in_queue[b]) return "block twice in the free queue";
    in_queue[b] = true;
  }
  int64_t referenced = 0;
  int64_t hashed = 0;
  for (BlockId b = 0; b < num_blocks_; ++b) {
    const Block& block = blocks_[b];
    if (block.ref < 0) return "negative ref count";
    if (block.ref > 0) ++referenced;
    if ((block.ref == 0) != in_queue[b]) return "free queue membership != (ref == 0)";
    if (block.has_hash) {
      ++hashed;
      if (cached_.Find(block.hash, [this](BlockId id) { return HashOfBlock(id); }) != b) {
        return "hashed block missing from the map";
      }
    }
  }
  if (referenced + num_free_ != num_blocks_) return "free + referenced != num_blocks";
  if (hashed != static_cast<int64_t>(cached_.size())) return "map holds blocks without a hash";
  return "";
}

}  // namespace warmroute::engine
