#include "core/engine/cached_block_map.h"

#include <cstdint>
#include <map>
#include <iterator>
#include <vector>

#include "common/rng.h"
#include "gtest/gtest.h"

namespace warmroute::engine {
namespace {

// The map keeps only block ids; the owner keeps each block's hash, as KvBlockManager does.
class CachedBlockMapTest : public ::testing::Test {
 protected:
  uint64_t HashOf(CachedBlockMap::Block b) const { return hashes_[static_cast<size_t>(b)]; }
  auto HashOfFn() const {
    return [this](CachedBlockMap::Block b) { return HashOf(b); };
  }

  std::vector<uint64_t> hashes_ = std::vector<uint64_t>(1000, 0);
};

TEST_F(CachedBlockMapTest, FindsInsertedHashesAndKeepsTheFirstHolder) {
  CachedBlockMap map(16);
  hashes_[3] = 42;
  EXPECT_EQ(map.Insert(42, 3, HashOfFn()), 3);
  hashes_[4] = 42;
  EXPECT_EQ(map.Insert(42, 4, HashOfFn()), 3);  // already cached by block 3
  EXPECT_EQ(map.Find(42, HashOfFn()), 3);
  EXPECT_EQ(map.Find(43, HashOfFn()), CachedBlockMap::kNone);
  EXPECT_EQ(map.size(), 1u);
  map.Erase(42, 3);
  EXPECT_EQ(map.Find(42, HashOfFn()), CachedBlockMap::kNone);
  EXPECT_EQ(map.size(), 0u);
}

// Random inserts and erases at full load, small integer hashes included, against std::map: a
// wrong backward shift would lose entries that live past a deleted slot.
TEST_F(CachedBlockMapTest, MatchesAReferenceMapUnderRandomInsertsAndErasesAtFullLoad) {
  constexpr int kBlocks = 1000;
  CachedBlockMap map(kBlocks);
  std::map<uint64_t, CachedBlockMap::Block> reference;
  std::vector<CachedBlockMap::Block> free_blocks;
  for (int b = kBlocks - 1; b >= 0; --b) free_blocks.push_back(b);
  Rng rng(9);
  for (int op = 0; op < 200000; ++op) {
    const bool insert = !free_blocks.empty() && (reference.empty() || rng.UniformInt(100) < 55);
    if (insert) {
      const uint64_t hash = rng.UniformInt(2) == 0 ? rng.UniformInt(3000) : rng.Next();
      if (reference.contains(hash)) continue;
      const CachedBlockMap::Block b = free_blocks.back();
      free_blocks.pop_back();
      hashes_[static_cast<size_t>(b)] = hash;
      ASSERT_EQ(map.Insert(hash, b, HashOfFn()), b);
      reference[hash] = b;
    } else {
      auto it = reference.begin();
      std::advance(it, static_cast<long>(rng.UniformInt(reference.size())));
      map.Erase(it->first, it->second);
      free_blocks.push_back(it->second);
      reference.erase(it);
    }
    if (op % 997 == 0) {
      ASSERT_EQ(map.size(), reference.size());
      for (const auto& [hash, block] : reference) ASSERT_EQ(map.Find(hash, HashOfFn()), block);
    }
  }
  std::vector<CachedBlockMap::Block> cleared;
  map.Clear([&](CachedBlockMap::Block b) { cleared.push_back(b); });
  EXPECT_EQ(cleared.size(), reference.size());
  EXPECT_EQ(map.size(), 0u);
}

}  // namespace
}  // namespace warmroute::engine
