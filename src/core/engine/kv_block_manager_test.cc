#include "core/engine/kv_block_manager.h"

#include <cstdint>
#include <numeric>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/rng.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::engine {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr int kBlockSize = 4;

// A sequence of whole blocks: tokens and the chained hashes the engine would compute (any
// injective-enough function of the prefix will do for the pool, which only compares hashes).
struct Sequence {
  std::vector<int32_t> tokens;
  std::vector<uint64_t> hashes;
};

Sequence MakeSequence(std::vector<int32_t> tokens) {
  Sequence s{std::move(tokens), {}};
  uint64_t parent = 0x1234;
  for (size_t i = 0; i + kBlockSize <= s.tokens.size(); i += kBlockSize) {
    for (int j = 0; j < kBlockSize; ++j)
      parent = Mix64(parent ^ static_cast<uint64_t>(s.tokens[i + j]));
    s.hashes.push_back(parent);
  }
  return s;
}

// tokens first, first+1, ... (num_blocks whole blocks).
Sequence Counting(int32_t first, int num_blocks) {
  std::vector<int32_t> tokens(static_cast<size_t>(num_blocks * kBlockSize));
  std::iota(tokens.begin(), tokens.end(), first);
  return MakeSequence(std::move(tokens));
}

// What a request does: look up its prefix, allocate the rest, compute and cache everything.
std::vector<BlockId> RunRequest(KvBlockManager& pool, const Sequence& s,
                                std::vector<KvEvent>* events, int64_t* hit = nullptr) {
  std::vector<BlockId> blocks;
  const int64_t n = static_cast<int64_t>(s.hashes.size());
  const int64_t found = pool.FindCachedPrefix(s.hashes, n, &blocks);
  if (hit != nullptr) *hit = found;
  EXPECT_TRUE(pool.Allocate(blocks, n - found, &blocks, events));
  pool.CacheFullBlocks(blocks, s.hashes, found, n, s.tokens, events);
  return blocks;
}

TEST(KvBlockManagerTest, FindsTheLongestCachedPrefixAndStopsAtTheFirstMiss) {
  KvBlockManager pool(16, kBlockSize);
  const Sequence a = Counting(100, 4);
  std::vector<KvEvent> events;
  pool.Free(RunRequest(pool, a, &events));

  std::vector<BlockId> found;
  EXPECT_EQ(pool.FindCachedPrefix(a.hashes, 10, &found), 4);
  EXPECT_EQ(found.size(), 4u);
  found.clear();
  EXPECT_EQ(pool.FindCachedPrefix(a.hashes, 3, &found), 3);  // capped

  // Same first two blocks, then a different third (and so, chained, a different fourth).
  std::vector<int32_t> tokens = a.tokens;
  tokens[2 * kBlockSize] = -1;
  const Sequence b = MakeSequence(tokens);
  found.clear();
  EXPECT_EQ(pool.FindCachedPrefix(b.hashes, 10, &found), 2);
  // A miss in the middle of a chain stops the walk even if a later hash is cached.
  std::vector<uint64_t> gap = {a.hashes[0], 999, a.hashes[2]};
  found.clear();
  EXPECT_EQ(pool.FindCachedPrefix(gap, 10, &found), 1);
  // Lookups change nothing.
  EXPECT_EQ(pool.num_used_blocks(), 0);
  EXPECT_EQ(pool.CheckInvariants(), "");
}

TEST(KvBlockManagerTest, SecondRequestReusesCachedBlocksWithoutNewAllocation) {
  KvBlockManager pool(8, kBlockSize);
  std::vector<KvEvent> events;
  const Sequence a = Counting(0, 3);
  std::vector<BlockId> first = RunRequest(pool, a, &events);
  int64_t hit = 0;
  std::vector<BlockId> second = RunRequest(pool, a, &events, &hit);  // concurrent, shares
  EXPECT_EQ(hit, 3);
  EXPECT_EQ(second, first);
  for (BlockId b : first) EXPECT_EQ(pool.RefCount(b), 2);
  EXPECT_EQ(pool.num_used_blocks(), 3);
  EXPECT_DOUBLE_EQ(pool.Usage(), 3.0 / 8);
  pool.Free(first);
  pool.Free(second);
  EXPECT_EQ(pool.num_used_blocks(), 0);
  EXPECT_EQ(pool.num_cached_blocks(), 3);
  EXPECT_EQ(pool.CheckInvariants(), "");
}

TEST(KvBlockManagerTest, ReferencedBlocksAreNeverEvicted) {
  KvBlockManager pool(4, kBlockSize);
  std::vector<KvEvent> events;
  const Sequence a = Counting(0, 2);
  std::vector<BlockId> held = RunRequest(pool, a, &events);  // pinned: still running
  std::vector<BlockId> b;
  ASSERT_TRUE(pool.Allocate({}, 2, &b, &events));
  // Every block is referenced: nothing can be allocated, and the failure changes nothing.
  std::vector<BlockId> c;
  EXPECT_FALSE(pool.Allocate({}, 1, &c, &events));
  EXPECT_THAT(c, IsEmpty());
  EXPECT_EQ(pool.num_free_blocks(), 0);
  pool.Free(b);
  ASSERT_TRUE(pool.Allocate({}, 2, &c, &events));
  std::vector<BlockId> found;
  EXPECT_EQ(pool.FindCachedPrefix(a.hashes, 2, &found), 2);
  EXPECT_EQ(found, held);
  EXPECT_EQ(pool.CheckInvariants(), "");
}

TEST(KvBlockManagerTest, FailedAllocationCountsUnreferencedCachedBlocksAndChangesNothing) {
  KvBlockManager pool(4, kBlockSize);
  std::vector<KvEvent> events;
  const Sequence a = Counting(0, 2);
  pool.Free(RunRequest(pool, a, &events));  // 2 cached blocks in the free queue
  std::vector<BlockId> blocks;
  ASSERT_EQ(pool.FindCachedPrefix(a.hashes, 2, &blocks), 2);
  // Touching the 2 cached blocks takes them out of the queue: only 2 remain for new ones.
  EXPECT_FALSE(pool.Allocate(blocks, 3, &blocks, &events));
  EXPECT_EQ(blocks.size(), 2u);
  EXPECT_EQ(pool.num_free_blocks(), 4);
  EXPECT_EQ(pool.num_cached_blocks(), 2);
  EXPECT_TRUE(pool.Allocate(blocks, 2, &blocks, &events));
  EXPECT_EQ(blocks.size(), 4u);
  EXPECT_EQ(pool.num_cached_blocks(), 2);  // nothing was evicted
  EXPECT_EQ(pool.CheckInvariants(), "");
}

TEST(KvBlockManagerTest, EvictsLeastRecentlyFreedFirstAndSequenceTailsFirst) {
  KvBlockManager pool(6, kBlockSize);
  std::vector<KvEvent> events;
  const Sequence a = Counting(0, 3);
  const Sequence b = Counting(1000, 3);
  std::vector<BlockId> blocks_a = RunRequest(pool, a, &events);
  std::vector<BlockId> blocks_b = RunRequest(pool, b, &events);
  EXPECT_THAT(blocks_a, ElementsAre(0, 1, 2));
  EXPECT_THAT(blocks_b, ElementsAre(3, 4, 5));
  pool.Free(blocks_a);
  pool.Free(blocks_b);
  EXPECT_THAT(pool.FreeQueue(), ElementsAre(2, 1, 0, 5, 4, 3));

  events.clear();
  std::vector<BlockId> fresh;
  ASSERT_TRUE(pool.Allocate({}, 1, &fresh, &events));
  EXPECT_THAT(fresh, ElementsAre(2));  // a's last block: a freed first, tail first
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, KvEvent::Kind::kBlockRemoved);
  EXPECT_THAT(events[0].block_hashes, ElementsAre(a.hashes[2]));
  std::vector<BlockId> found;
  EXPECT_EQ(pool.FindCachedPrefix(a.hashes, 3, &found), 2);

  // Reusing a cached block takes it out of the middle of the queue: b's head survives.
  found.clear();
  ASSERT_EQ(pool.FindCachedPrefix(b.hashes, 1, &found), 1);
  ASSERT_TRUE(pool.Allocate(found, 0, &found, &events));
  EXPECT_THAT(pool.FreeQueue(), ElementsAre(1, 0, 5, 4));
  events.clear();
  ASSERT_TRUE(pool.Allocate({}, 3, &fresh, &events));
  EXPECT_THAT(fresh, ElementsAre(2, 1, 0, 5));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_THAT(events[0].block_hashes, ElementsAre(a.hashes[1], a.hashes[0], b.hashes[2]));
  EXPECT_EQ(pool.num_cached_blocks(), 2);  // b's blocks 0 (referenced) and 1
  EXPECT_EQ(pool.CheckInvariants(), "");
}

TEST(KvBlockManagerTest, EmitsStoredEventsWithParentsAndTokens) {
  KvBlockManager pool(8, kBlockSize);
  std::vector<KvEvent> events;
  const Sequence a = Counting(10, 3);
  std::vector<BlockId> blocks;
  ASSERT_TRUE(pool.Allocate({}, 3, &blocks, &events));
  EXPECT_THAT(events, IsEmpty());
  // Blocks become full one at a time (chunked prefill): first the first block, then two more.
  pool.CacheFullBlocks(blocks, a.hashes, 0, 1, a.tokens, &events);
  pool.CacheFullBlocks(blocks, a.hashes, 1, 3, a.tokens, &events);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, KvEvent::Kind::kBlockStored);
  EXPECT_THAT(events[0].block_hashes, ElementsAre(a.hashes[0]));
  EXPECT_FALSE(events[0].parent_block_hash.has_value());
  EXPECT_THAT(events[0].token_ids, ElementsAre(10, 11, 12, 13));
  EXPECT_EQ(events[0].block_size, kBlockSize);
  EXPECT_THAT(events[1].block_hashes, ElementsAre(a.hashes[1], a.hashes[2]));
  EXPECT_EQ(events[1].parent_block_hash, a.hashes[0]);
  EXPECT_EQ(events[1].token_ids.size(), 8u);
  EXPECT_EQ(events[1].token_ids.front(), 14);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(pool.HashOf(blocks[i]), a.hashes[i]);
}

TEST(KvBlockManagerTest, DuplicateBlocksKeepTheFirstMappingAndAreNotStoredAgain) {
  KvBlockManager pool(8, kBlockSize);
  std::vector<KvEvent> events;
  const Sequence a = Counting(0, 2);
  std::vector<int32_t> tokens = a.tokens;
  tokens.push_back(77);
  tokens.resize(12, 5);
  const Sequence b = MakeSequence(tokens);  // same first 2 blocks as a, plus a third
  // Both requests were admitted before either cached anything: no shared blocks.
  std::vector<BlockId> blocks_a, blocks_b;
  ASSERT_TRUE(pool.Allocate({}, 2, &blocks_a, &events));
  ASSERT_TRUE(pool.Allocate({}, 3, &blocks_b, &events));
  pool.CacheFullBlocks(blocks_a, a.hashes, 0, 2, a.tokens, &events);
  events.clear();
  pool.CacheFullBlocks(blocks_b, b.hashes, 0, 3, b.tokens, &events);
  // Only b's third block is new; its event names its parent.
  ASSERT_EQ(events.size(), 1u);
  EXPECT_THAT(events[0].block_hashes, ElementsAre(b.hashes[2]));
  EXPECT_EQ(events[0].parent_block_hash, b.hashes[1]);
  EXPECT_EQ(events[0].token_ids.size(), static_cast<size_t>(kBlockSize));
  EXPECT_EQ(pool.HashOf(blocks_b[0]), std::nullopt);
  std::vector<BlockId> found;
  ASSERT_EQ(pool.FindCachedPrefix(b.hashes, 3, &found), 3);
  EXPECT_THAT(found, ElementsAre(blocks_a[0], blocks_a[1], blocks_b[2]));
  pool.Free(blocks_b);
  pool.Free(blocks_a);
  EXPECT_EQ(pool.num_cached_blocks(), 3);
  EXPECT_EQ(pool.CheckInvariants(), "");
}

TEST(KvBlockManagerTest, ResetClearsEveryHashOnlyWhenNothingIsReferenced) {
  KvBlockManager pool(8, kBlockSize);
  std::vector<KvEvent> events;
  const Sequence a = Counting(0, 3);
  std::vector<BlockId> blocks = RunRequest(pool, a, &events);
  events.clear();
  EXPECT_FALSE(pool.Reset(&events));
  EXPECT_THAT(events, IsEmpty());
  EXPECT_EQ(pool.num_cached_blocks(), 3);
  pool.Free(blocks);
  EXPECT_TRUE(pool.Reset(&events));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, KvEvent::Kind::kAllBlocksCleared);
  EXPECT_EQ(pool.num_cached_blocks(), 0);
  std::vector<BlockId> found;
  EXPECT_EQ(pool.FindCachedPrefix(a.hashes, 3, &found), 0);
  EXPECT_EQ(pool.CheckInvariants(), "");
  // Allocation after a reset evicts nothing.
  events.clear();
  ASSERT_TRUE(pool.Allocate({}, 8, &found, &events));
  EXPECT_THAT(events, IsEmpty());
}

TEST(KvBlockManagerDeathTest, DoubleFreeCrashes) {
  KvBlockManager pool(4, kBlockSize);
  std::vector<BlockId> blocks;
  ASSERT_TRUE(pool.Allocate({}, 1, &blocks, nullptr));
  pool.Free(blocks);
  EXPECT_DEATH(pool.Free(blocks), "double free");
}

// Random requests over a few shared prefixes; after every operation the pool's invariants hold
// and every block's reference count equals the number of live requests holding it.
TEST(KvBlockManagerTest, InvariantsHoldUnderRandomOperations) {
  KvBlockManager pool(64, kBlockSize);
  Rng rng(20240611);
  std::vector<Sequence> prefixes;
  for (int i = 0; i < 6; ++i) prefixes.push_back(Counting(i * 10000, 12));
  struct Live {
    Sequence seq;
    std::vector<BlockId> blocks;
    int64_t cached_upto = 0;
  };
  std::vector<Live> live;
  int64_t stored = 0, removed = 0, allocation_failures = 0, total_hits = 0;
  absl::flat_hash_map<uint64_t, int> stored_minus_removed;
  for (int op = 0; op < 10000; ++op) {
    std::vector<KvEvent> events;
    const uint64_t kind = rng.UniformInt(10);
    if (kind < 5) {  // a new request: a shared prefix plus a random tail
      const Sequence& p = prefixes[rng.UniformInt(prefixes.size())];
      std::vector<int32_t> tokens(p.tokens.begin(),
                                  p.tokens.begin() + kBlockSize * (1 + rng.UniformInt(12)));
      const int tail = static_cast<int>(rng.UniformInt(4)) * kBlockSize;
      for (int i = 0; i < tail; ++i) tokens.push_back(static_cast<int32_t>(rng.UniformInt(50)));
      Live l{MakeSequence(std::move(tokens)), {}, 0};
      const int64_t n = static_cast<int64_t>(l.seq.hashes.size());
      const int64_t hit = pool.FindCachedPrefix(l.seq.hashes, n, &l.blocks);
      const int64_t free_before = pool.num_free_blocks();
      if (!pool.Allocate(l.blocks, n - hit, &l.blocks, &events)) {
        ++allocation_failures;
        ASSERT_EQ(pool.num_free_blocks(), free_before);
      } else {
        total_hits += hit;
        l.cached_upto = hit;
        live.push_back(std::move(l));
      }
    } else if (kind < 8 && !live.empty()) {  // some blocks of a live request become computed
      Live& l = live[rng.UniformInt(live.size())];
      const int64_t n = static_cast<int64_t>(l.seq.hashes.size());
      const int64_t upto =
          l.cached_upto +
          static_cast<int64_t>(rng.UniformInt(static_cast<uint64_t>(n - l.cached_upto) + 1));
      pool.CacheFullBlocks(l.blocks, l.seq.hashes, l.cached_upto, upto, l.seq.tokens, &events);
      l.cached_upto = upto;
    } else if (!live.empty()) {  // a request finishes
      const size_t i = rng.UniformInt(live.size());
      pool.Free(live[i].blocks);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    }
    for (const KvEvent& e : events) {
      for (uint64_t h : e.block_hashes) {
        if (e.kind == KvEvent::Kind::kBlockStored) {
          ++stored;
          ++stored_minus_removed[h];
        } else {
          ++removed;
          --stored_minus_removed[h];
        }
      }
    }
    ASSERT_EQ(pool.CheckInvariants(), "") << "after op " << op;
    absl::flat_hash_map<BlockId, int> holders;
    for (const Live& l : live) {
      for (BlockId b : l.blocks) ++holders[b];
    }
    for (BlockId b = 0; b < pool.num_blocks(); ++b) {
      ASSERT_EQ(pool.RefCount(b), holders.contains(b) ? holders[b] : 0) << "block " << b;
    }
  }
  // The events describe the cache exactly: each hash stored once more than removed iff cached.
  int64_t net_cached = 0;
  for (const auto& [hash, count] : stored_minus_removed) {
    ASSERT_TRUE(count == 0 || count == 1);
    net_cached += count;
  }
  EXPECT_EQ(net_cached, pool.num_cached_blocks());
  // The run exercised what it should.
  EXPECT_GT(stored, 1000);
  EXPECT_GT(removed, 100);
  EXPECT_GT(allocation_failures, 10);
  EXPECT_GT(total_hits, 1000);
}

}  // namespace
}  // namespace warmroute::engine
