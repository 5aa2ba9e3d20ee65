#include "core/routing/prefix_index.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "common/rng.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::routing {
namespace {

using ::testing::ElementsAre;

// A chain of `n` distinct hashes, distinct across `seed`s.
std::vector<uint64_t> Chain(uint64_t seed, size_t n) {
  std::vector<uint64_t> chain(n);
  for (size_t i = 0; i < n; ++i) chain[i] = Mix64(seed * 1000003 + i);
  return chain;
}

// `prefix` followed by `n` more hashes.
std::vector<uint64_t> Extend(std::vector<uint64_t> prefix, uint64_t seed, size_t n) {
  for (uint64_t hash : Chain(seed, n)) prefix.push_back(hash);
  return prefix;
}

TEST(PrefixIndexTest, MatchReportsLeadingDepthPerBackend) {
  PrefixIndex index({});
  for (BackendId b = 0; b < 4; ++b) index.SetCapacity(b, 100);
  const std::vector<uint64_t> chain = Chain(1, 10);
  index.Insert(0, std::span(chain).first(10));
  index.Insert(1, std::span(chain).first(3));
  index.Insert(3, Chain(2, 10));
  EXPECT_THAT(index.Match(chain), ElementsAre(10, 3, 0, 0));
  EXPECT_THAT(index.Match(std::span(chain).first(2)), ElementsAre(2, 2, 0, 0));
  EXPECT_THAT(index.Match(Chain(3, 5)), ElementsAre(0, 0, 0, 0));
  EXPECT_THAT(index.Match({}), ElementsAre(0, 0, 0, 0));
  EXPECT_EQ(index.entries(), 23u);
  EXPECT_EQ(index.entries(1), 3u);
}

TEST(PrefixIndexTest, MatchStopsAtTheFirstMissingBlock) {
  PrefixIndex index({});
  index.SetCapacity(0, 100);
  index.SetCapacity(1, 100);
  const std::vector<uint64_t> chain = Chain(1, 8);
  index.Insert(0, chain);
  index.Insert(1, chain);
  const std::vector<uint64_t> hole = {chain[4]};
  index.Remove(0, hole);  // backend 0 lost block 4: blocks 5..7 no longer count
  EXPECT_THAT(index.Match(chain), ElementsAre(4, 8));
}

// Sixty-four backends holding the same chain to 64 different depths (0 to 315 of 320 blocks):
// Match's search keeps one interval per depth still to be found.
TEST(PrefixIndexTest, MatchFindsSixtyFourDifferentDepths) {
  PrefixIndex index({});
  const std::vector<uint64_t> chain = Chain(1, 320);
  std::vector<int32_t> expected;
  for (BackendId b = 0; b < 64; ++b) {
    index.SetCapacity(b, 1000);
    const size_t held = (b * 37) % 64 * 5;
    index.Insert(b, std::span(chain).first(held));
    expected.push_back(static_cast<int32_t>(held));
  }
  EXPECT_EQ(index.Match(chain), expected);
  for (size_t n : {0, 1, 2, 3, 9, 10, 11, 100, 319}) {
    std::vector<int32_t> cut = expected;
    for (int32_t& depth : cut) depth = std::min(depth, static_cast<int32_t>(n));
    EXPECT_EQ(index.Match(std::span(chain).first(n)), cut) << n << " blocks";
  }
}

// A Truncate can take a block from under another chain's blocks (here backend 0 loses prefix
// block 59, which b extends): b's later blocks are still in the index but no longer count while
// other chains come and go (Match's search must not see past the missing block), until eviction
// takes them or b is inserted again.
TEST(PrefixIndexTest, BlocksWhoseParentWasTruncatedDoNotCount) {
  PrefixIndex index({});
  index.SetCapacity(0, 200);
  index.SetCapacity(1, 1000);
  const std::vector<uint64_t> prefix = Chain(1, 60);
  const std::vector<uint64_t> a = Extend(prefix, 2, 40);
  const std::vector<uint64_t> b = Extend(prefix, 3, 40);
  index.Insert(0, Chain(7, 30));  // the least recently used, behind everything below
  for (BackendId id : {0, 1}) {
    index.Insert(id, a);
    index.Insert(id, b);
  }
  index.Truncate(0, a, 59);  // prefix[59] and a's own 40 blocks
  EXPECT_EQ(index.entries(0), 129u);
  EXPECT_THAT(index.Match(b), ElementsAre(59, 100));
  index.Insert(0, Chain(4, 40));  // 169 entries: nothing evicted
  EXPECT_THAT(index.Match(b), ElementsAre(59, 100));
  index.Insert(0, Chain(5, 40));  // evicts 9 of the oldest chain's blocks
  EXPECT_EQ(index.entries(0), 200u);
  EXPECT_THAT(index.Match(b), ElementsAre(59, 100));
  index.Insert(0, Chain(6, 80));  // evicts the oldest chain, b's 40 blocks, prefix[40..58]
  EXPECT_THAT(index.Match(b), ElementsAre(40, 100));
  index.Insert(0, Chain(8, 60));  // evicts the rest of the prefix and 20 blocks of Chain(4, 40)
  EXPECT_THAT(index.Match(b), ElementsAre(0, 100));
  index.Insert(0, b);
  EXPECT_THAT(index.Match(b), ElementsAre(100, 100));
  EXPECT_THAT(index.Match(a), ElementsAre(60, 100));
  EXPECT_EQ(index.entries(0), 200u);
}

TEST(PrefixIndexTest, NoBackendsMatchesNothing) {
  PrefixIndex index({});
  EXPECT_TRUE(index.Match(Chain(1, 4)).empty());
  EXPECT_EQ(index.NumBackends(), 0u);
}

TEST(PrefixIndexTest, InsertWithoutCapacityStoresNothing) {
  PrefixIndex index({});
  index.SetCapacity(1, 10);
  index.Insert(0, Chain(1, 4));
  index.Insert(5, Chain(1, 4));
  EXPECT_EQ(index.entries(), 0u);
  EXPECT_EQ(index.NumBackends(), 2u);
}

TEST(PrefixIndexTest, EvictsLeastRecentlyUsedTailBlocksFirst) {
  PrefixIndex index({});
  index.SetCapacity(0, 6);
  const std::vector<uint64_t> a = Chain(1, 4);
  const std::vector<uint64_t> b = Chain(2, 4);
  index.Insert(0, a);
  index.Insert(0, b);  // needs 2 more blocks: a's last two go
  EXPECT_THAT(index.Match(a), ElementsAre(2));
  EXPECT_THAT(index.Match(b), ElementsAre(4));
  EXPECT_EQ(index.entries(0), 6u);
}

TEST(PrefixIndexTest, ChainLongerThanTheBoundKeepsItsHead) {
  PrefixIndex index({});
  index.SetCapacity(0, 5);
  const std::vector<uint64_t> chain = Chain(1, 12);
  index.Insert(0, chain);
  EXPECT_THAT(index.Match(chain), ElementsAre(5));
  EXPECT_EQ(index.entries(), 5u);
}

TEST(PrefixIndexTest, InsertRefreshesHeldBlocks) {
  PrefixIndex index({});
  index.SetCapacity(0, 8);
  const std::vector<uint64_t> a = Chain(1, 4);
  const std::vector<uint64_t> b = Chain(2, 4);
  index.Insert(0, a);
  index.Insert(0, b);
  index.Insert(0, a);  // a is used again: b is now the least recently used
  index.Insert(0, Chain(3, 4));
  EXPECT_THAT(index.Match(a), ElementsAre(4));
  EXPECT_THAT(index.Match(b), ElementsAre(0));
}

TEST(PrefixIndexTest, MatchIsNotAUse) {
  PrefixIndex index({});
  index.SetCapacity(0, 8);
  const std::vector<uint64_t> a = Chain(1, 4);
  const std::vector<uint64_t> b = Chain(2, 4);
  index.Insert(0, a);
  index.Insert(0, b);
  EXPECT_THAT(index.Match(a), ElementsAre(4));
  index.Insert(0, Chain(3, 4));
  EXPECT_THAT(index.Match(a), ElementsAre(0));
  EXPECT_THAT(index.Match(b), ElementsAre(4));
}

TEST(PrefixIndexTest, SharedPrefixIsHeldOncePerBackend) {
  PrefixIndex index({});
  index.SetCapacity(0, 100);
  const std::vector<uint64_t> system = Chain(1, 10);
  index.Insert(0, Extend(system, 2, 3));
  index.Insert(0, Extend(system, 3, 5));
  EXPECT_EQ(index.entries(0), 18u);
  EXPECT_THAT(index.Match(Extend(system, 3, 5)), ElementsAre(15));
  EXPECT_THAT(index.Match(Extend(system, 4, 5)), ElementsAre(10));
}

TEST(PrefixIndexTest, TruncateDropsBlocksBeyondWhatTheEngineHad) {
  PrefixIndex index({});
  index.SetCapacity(0, 100);
  index.SetCapacity(1, 100);
  const std::vector<uint64_t> chain = Chain(1, 10);
  index.Insert(0, chain);
  index.Insert(1, chain);
  index.Truncate(0, chain, 6);
  EXPECT_THAT(index.Match(chain), ElementsAre(6, 10));
  EXPECT_EQ(index.entries(0), 6u);
  index.Truncate(0, chain, 0);
  EXPECT_THAT(index.Match(chain), ElementsAre(0, 10));
  EXPECT_EQ(index.entries(), 10u);
}

TEST(PrefixIndexTest, RemoveDropsSingleBlocksOfOneBackend) {
  PrefixIndex index({});
  index.SetCapacity(0, 100);
  index.SetCapacity(1, 100);
  const std::vector<uint64_t> chain = Chain(1, 6);
  index.Insert(0, chain);
  index.Insert(1, chain);
  const std::vector<uint64_t> removed = {chain[2], chain[5], Mix64(12345)};
  index.Remove(1, removed);
  EXPECT_THAT(index.Match(chain), ElementsAre(6, 2));
  EXPECT_EQ(index.entries(1), 4u);
}

// Remove and Truncate prefetch the slots and entries of the hashes dozens ahead of the one they
// remove, while the removals move slots (backward-shift deletion): lists much longer than that
// distance, with absent and repeated hashes, remove exactly what they list.
TEST(PrefixIndexTest, LongRemoveListsRemoveExactlyTheirBlocks) {
  PrefixIndex index({});
  index.SetCapacity(0, 1000);
  index.SetCapacity(1, 1000);
  const std::vector<uint64_t> chain = Chain(1, 300);
  index.Insert(0, chain);
  index.Insert(1, chain);
  // Blocks 299 down to 100, each followed by an absent hash; block 150 twice.
  std::vector<uint64_t> removed;
  for (size_t i = 300; i-- > 100;) {
    removed.push_back(chain[i]);
    removed.push_back(Mix64(900000 + i));
  }
  removed.push_back(chain[150]);
  index.Remove(0, removed);
  EXPECT_THAT(index.Match(chain), ElementsAre(100, 300));
  EXPECT_EQ(index.entries(0), 100u);
  EXPECT_EQ(index.entries(), 400u);
  index.Truncate(1, chain, 300);  // keeps everything
  index.Truncate(1, chain, 400);  // beyond the chain: nothing to drop
  EXPECT_EQ(index.entries(1), 300u);
  index.Truncate(1, chain, 7);
  EXPECT_THAT(index.Match(chain), ElementsAre(100, 7));
  EXPECT_EQ(index.entries(), 107u);
  // What is left is whole: it can be removed, and inserted again.
  index.Remove(0, std::span(chain).first(100));
  EXPECT_EQ(index.entries(0), 0u);
  index.Insert(0, chain);
  EXPECT_THAT(index.Match(chain), ElementsAre(300, 7));
}

TEST(PrefixIndexTest, ClearForgetsOneBackend) {
  PrefixIndex index({});
  index.SetCapacity(0, 100);
  index.SetCapacity(1, 100);
  const std::vector<uint64_t> chain = Chain(1, 6);
  index.Insert(0, chain);
  index.Insert(1, chain);
  index.Clear(0);
  EXPECT_THAT(index.Match(chain), ElementsAre(0, 6));
  EXPECT_EQ(index.entries(), 6u);
  index.Insert(0, chain);  // the capacity is kept
  EXPECT_THAT(index.Match(chain), ElementsAre(6, 6));
}

TEST(PrefixIndexTest, ShrinkingCapacityEvictsLeastRecentlyUsed) {
  PrefixIndex index({});
  index.SetCapacity(0, 100);
  const std::vector<uint64_t> a = Chain(1, 10);
  const std::vector<uint64_t> b = Chain(2, 10);
  index.Insert(0, a);
  index.Insert(0, b);
  index.SetCapacity(0, 14);
  EXPECT_EQ(index.entries(0), 14u);
  EXPECT_THAT(index.Match(a), ElementsAre(4));
  EXPECT_THAT(index.Match(b), ElementsAre(10));
  index.SetCapacity(0, 0);  // removed backend
  EXPECT_EQ(index.entries(), 0u);
  index.Insert(0, a);
  EXPECT_EQ(index.entries(), 0u);
}

TEST(PrefixIndexTest, GlobalBoundScalesEveryBackendsShare) {
  PrefixIndex index({.max_entries = 100});
  index.SetCapacity(0, 100);
  index.Insert(0, Chain(1, 100));
  EXPECT_EQ(index.entries(0), 100u);
  index.SetCapacity(1, 300);  // capacities add up to 400: every bound is scaled by 1/4
  EXPECT_EQ(index.bound(0), 25u);
  EXPECT_EQ(index.bound(1), 75u);
  EXPECT_EQ(index.entries(0), 25u);
  EXPECT_THAT(index.Match(Chain(1, 100)), ElementsAre(25, 0));  // kept its most recent head
  index.Insert(1, Chain(2, 200));
  EXPECT_EQ(index.entries(1), 75u);
  EXPECT_LE(index.entries(), 100u);
  index.SetCapacity(1, 0);  // back to unscaled
  EXPECT_EQ(index.bound(0), 100u);
  EXPECT_EQ(index.entries(), 25u);
}

TEST(PrefixIndexTest, MatchWorksBeyondSixtyFourBackends) {
  PrefixIndex index({});
  constexpr BackendId kBackends = 150;
  for (BackendId b = 0; b < kBackends; ++b) index.SetCapacity(b, 1000);
  const std::vector<uint64_t> chain = Chain(1, 200);
  for (BackendId b = 0; b < kBackends; ++b) {
    index.Insert(b, std::span(chain).first(b));  // backend b holds b blocks
  }
  // Backends 5 and 69 share a mask bit; removing 69's block must not hide 5's.
  const std::vector<uint64_t> block = {chain[1]};
  index.Remove(69, block);
  std::vector<int32_t> expected(kBackends);
  for (BackendId b = 0; b < kBackends; ++b) expected[b] = static_cast<int32_t>(b);
  expected[69] = 1;
  EXPECT_EQ(index.Match(chain), expected);
}

// At 1M entries the index must cost at most 64 bytes per entry, tables included: both when every
// hash is held by one backend (one table slot per entry, the worst case) and when shared.
TEST(PrefixIndexTest, MemoryPerEntryIsAtMostSixtyFourBytes) {
  constexpr size_t kEntries = size_t{1} << 20;
  for (int holders : {1, 8}) {
    PrefixIndex index({.max_entries = kEntries});
    constexpr BackendId kBackends = 64;
    for (BackendId b = 0; b < kBackends; ++b) index.SetCapacity(b, kEntries / kBackends);
    // Chains of 256 blocks, each chain on `holders` consecutive backends.
    uint64_t seed = 0;
    for (BackendId b = 0; index.entries() < kEntries; b = (b + holders) % kBackends) {
      const std::vector<uint64_t> chain = Chain(++seed, 256);
      for (int h = 0; h < holders; ++h) index.Insert((b + h) % kBackends, chain);
    }
    ASSERT_EQ(index.entries(), kEntries);
    const double per_entry = static_cast<double>(index.MemoryBytes()) / index.entries();
    EXPECT_LE(per_entry, 64.0) << holders << " holders per hash";
    EXPECT_GE(per_entry, 24.0);  // it does count the entries
  }
}

// A slow, obviously correct model of the documented rules.
class ReferenceIndex {
 public:
  explicit ReferenceIndex(size_t max_entries) : max_entries_(max_entries) {}

  void SetCapacity(BackendId id, int64_t capacity) {
    capacity = std::max<int64_t>(capacity, 0);
    if (id >= backends_.size()) {
      if (capacity == 0) return;
      backends_.resize(id + 1);
    }
    backends_[id].capacity = capacity;
    if (capacity == 0) Clear(id);
    int64_t total = 0;
    for (const Backend& b : backends_) total += b.capacity;
    for (Backend& b : backends_) {
      b.bound = total <= static_cast<int64_t>(max_entries_)
                    ? b.capacity
                    : static_cast<int64_t>(static_cast<unsigned __int128>(b.capacity) *
                                           max_entries_ / static_cast<uint64_t>(total));
      while (static_cast<int64_t>(b.by_hash.size()) > b.bound) EvictOldest(b);
    }
  }

  void Insert(BackendId id, const std::vector<uint64_t>& chain) {
    if (id >= backends_.size() || backends_[id].bound <= 0) return;
    Backend& b = backends_[id];
    for (size_t k = chain.size(); k-- > 0;) {
      auto it = b.by_hash.find(chain[k]);
      if (it != b.by_hash.end()) {
        b.by_tick.erase(it->second);
        it->second = ++tick_;
        b.by_tick[tick_] = chain[k];
        continue;
      }
      if (static_cast<int64_t>(b.by_hash.size()) >= b.bound) EvictOldest(b);
      b.by_hash[chain[k]] = ++tick_;
      b.by_tick[tick_] = chain[k];
    }
  }

  void Remove(BackendId id, const std::vector<uint64_t>& hashes) {
    if (id >= backends_.size()) return;
    Backend& b = backends_[id];
    for (uint64_t hash : hashes) {
      auto it = b.by_hash.find(hash);
      if (it == b.by_hash.end()) continue;
      b.by_tick.erase(it->second);
      b.by_hash.erase(it);
    }
  }

  void Clear(BackendId id) {
    if (id >= backends_.size()) return;
    backends_[id].by_hash.clear();
    backends_[id].by_tick.clear();
  }

  std::vector<int32_t> Match(const std::vector<uint64_t>& chain) const {
    std::vector<int32_t> depth;
    for (const Backend& b : backends_) {
      int32_t d = 0;
      while (d < static_cast<int32_t>(chain.size()) && b.by_hash.count(chain[d]) != 0) ++d;
      depth.push_back(d);
    }
    return depth;
  }

  size_t entries(BackendId id) const { return backends_[id].by_hash.size(); }
  size_t NumBackends() const { return backends_.size(); }

 private:
  struct Backend {
    int64_t capacity = 0;
    int64_t bound = 0;
    std::map<uint64_t, uint64_t> by_hash;  // hash -> last use
    std::map<uint64_t, uint64_t> by_tick;  // last use -> hash
  };

  static void EvictOldest(Backend& b) {
    auto oldest = b.by_tick.begin();
    b.by_hash.erase(oldest->second);
    b.by_tick.erase(oldest);
  }

  size_t max_entries_;
  uint64_t tick_ = 0;
  std::vector<Backend> backends_;
};

// Prompts drawn from a small tree of shared prefixes, so backends share and overlap blocks. Half
// the hashes are small integers, to exercise the table with badly distributed keys.
std::vector<uint64_t> RandomChain(Rng& rng) {
  std::vector<uint64_t> chain(rng.UniformInt(40));
  uint64_t parent = rng.UniformInt(3);
  const bool small = rng.UniformInt(2) == 0;
  for (uint64_t& hash : chain) {
    parent = parent * 5 + rng.UniformInt(rng.UniformInt(4) == 0 ? 5 : 1) + 1;
    hash = small ? parent : Mix64(parent);
  }
  return chain;
}

void RunAgainstReference(uint64_t seed, BackendId max_backends, size_t max_entries) {
  Rng rng(seed);
  PrefixIndex index({.max_entries = max_entries});
  ReferenceIndex reference(max_entries);
  for (int op = 0; op < 20000; ++op) {
    const auto backend = static_cast<BackendId>(rng.UniformInt(max_backends));
    const uint64_t kind = rng.UniformInt(100);
    if (kind < 5) {
      const int64_t capacity =
          rng.UniformInt(5) == 0 ? 0 : static_cast<int64_t>(rng.UniformInt(300));
      index.SetCapacity(backend, capacity);
      reference.SetCapacity(backend, capacity);
    } else if (kind < 55) {
      const std::vector<uint64_t> chain = RandomChain(rng);
      // Insert's held_hint must not change the result: none, the true depth, or a wrong one.
      size_t hint = 0;
      if (const uint64_t pick = rng.UniformInt(3); pick == 1) {
        const std::vector<int32_t> depth = index.Match(chain);
        hint = backend < depth.size() ? static_cast<size_t>(depth[backend]) : 0;
      } else if (pick == 2) {
        hint = rng.UniformInt(chain.size() + 3);
      }
      index.Insert(backend, chain, hint);
      reference.Insert(backend, chain);
    } else if (kind < 85) {
      const std::vector<uint64_t> chain = RandomChain(rng);
      ASSERT_EQ(index.Match(chain), reference.Match(chain)) << "op " << op;
    } else if (kind < 92) {
      const std::vector<uint64_t> chain = RandomChain(rng);
      const size_t keep = rng.UniformInt(chain.size() + 1);
      index.Truncate(backend, chain, keep);
      reference.Remove(backend, std::vector<uint64_t>(chain.begin() + keep, chain.end()));
    } else if (kind < 99) {
      std::vector<uint64_t> hashes = RandomChain(rng);
      hashes.resize(std::min<size_t>(hashes.size(), 3));
      index.Remove(backend, hashes);
      reference.Remove(backend, hashes);
    } else {
      index.Clear(backend);
      reference.Clear(backend);
    }
    ASSERT_EQ(index.NumBackends(), reference.NumBackends()) << "op " << op;
    size_t total = 0;
    for (BackendId b = 0; b < reference.NumBackends(); ++b) {
      ASSERT_EQ(index.entries(b), reference.entries(b)) << "op " << op << " backend " << b;
      total += reference.entries(b);
    }
    ASSERT_EQ(index.entries(), total) << "op " << op;
    ASSERT_LE(index.entries(), max_entries) << "op " << op;
  }
}

TEST(PrefixIndexTest, AgreesWithReferenceModelUpToSixtyFourBackends) {
  RunAgainstReference(/*seed=*/1, /*max_backends=*/8, /*max_entries=*/1000);
  RunAgainstReference(/*seed=*/2, /*max_backends=*/64, /*max_entries=*/5000);
}

TEST(PrefixIndexTest, AgreesWithReferenceModelBeyondSixtyFourBackends) {
  RunAgainstReference(/*seed=*/3, /*max_backends=*/130, /*max_entries=*/4000);
}

TEST(PrefixIndexTest, AgreesWithReferenceModelWithoutGlobalPressure) {
  RunAgainstReference(/*seed=*/4, /*max_backends=*/4, /*max_entries=*/1 << 20);
}

}  // namespace
}  // namespace warmroute::routing
