#include "core/request/block_hash.h"

#include <cstdint>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "xxhash.h"

namespace warmroute::request {
namespace {

std::vector<int32_t> Iota(int n, int32_t start = 1000) {
  std::vector<int32_t> tokens(n);
  std::iota(tokens.begin(), tokens.end(), start);
  return tokens;
}

TEST(BlockHashTest, RootIsDeterministic) {
  EXPECT_EQ(RootBlockHash({.model = "m", .lora = "l", .cache_salt = "s"}),
            RootBlockHash({.model = "m", .lora = "l", .cache_salt = "s"}));
}

// The root's input is "warmroute/block-root/v1" and then each field as its 8-byte little-endian
// length and its bytes. Pinned, so that a change of the encoding (which would move every prefix
// key, and the simulator's golden results with them) is deliberate. The long key takes the
// encoder's heap path (more than 256 bytes).
TEST(BlockHashTest, RootIsTheHashOfItsEncoding) {
  auto encode = [](std::string_view model, std::string_view lora, std::string_view salt) {
    std::string out = "warmroute/block-root/v1";
    for (std::string_view field : {model, lora, salt}) {
      for (int i = 0; i < 8; ++i)
        out.push_back(static_cast<char>((field.size() >> (8 * i)) & 0xff));
      out.append(field);
    }
    return XXH3_64bits(out.data(), out.size());
  };
  EXPECT_EQ(RootBlockHash({.model = "llama-3-8b", .lora = "", .cache_salt = "tenant-a"}),
            encode("llama-3-8b", "", "tenant-a"));
  const std::string long_salt(300, 's');
  EXPECT_EQ(RootBlockHash({.model = "m", .lora = "adapter", .cache_salt = long_salt}),
            encode("m", "adapter", long_salt));
}

TEST(BlockHashTest, RootSeparatesFieldsUnambiguously) {
  EXPECT_NE(RootBlockHash({.model = "ab", .lora = "c", .cache_salt = ""}),
            RootBlockHash({.model = "a", .lora = "bc", .cache_salt = ""}));
  EXPECT_NE(RootBlockHash({.model = "m", .lora = "x", .cache_salt = ""}),
            RootBlockHash({.model = "m", .lora = "", .cache_salt = "x"}));
  EXPECT_NE(RootBlockHash({.model = "", .lora = "", .cache_salt = "m"}),
            RootBlockHash({.model = "m", .lora = "", .cache_salt = ""}));
}

TEST(BlockHashTest, EveryKeyFieldChangesTheRoot) {
  const uint64_t base = RootBlockHash({.model = "m", .lora = "l", .cache_salt = "s"});
  EXPECT_NE(base, RootBlockHash({.model = "m2", .lora = "l", .cache_salt = "s"}));
  EXPECT_NE(base, RootBlockHash({.model = "m", .lora = "l2", .cache_salt = "s"}));
  EXPECT_NE(base, RootBlockHash({.model = "m", .lora = "l", .cache_salt = "s2"}));
  EXPECT_NE(base, RootBlockHash({.model = "m", .lora = "l", .cache_salt = ""}));
}

TEST(BlockHashTest, HashesAreDeterministic) {
  const std::vector<int32_t> tokens = Iota(100);
  const uint64_t root = RootBlockHash({.model = "m", .lora = "", .cache_salt = ""});
  EXPECT_EQ(HashFullBlocks(tokens, 16, root), HashFullBlocks(tokens, 16, root));
}

TEST(BlockHashTest, OnlyFullBlocksAreHashed) {
  const uint64_t root = 7;
  EXPECT_TRUE(HashFullBlocks(Iota(0), 16, root).empty());
  EXPECT_TRUE(HashFullBlocks(Iota(15), 16, root).empty());
  EXPECT_EQ(HashFullBlocks(Iota(16), 16, root).size(), 1u);
  EXPECT_EQ(HashFullBlocks(Iota(47), 16, root).size(), 2u);
  EXPECT_EQ(HashFullBlocks(Iota(48), 16, root).size(), 3u);
  // The partial tail does not change the full blocks' hashes.
  EXPECT_EQ(HashFullBlocks(Iota(47), 16, root), HashFullBlocks(Iota(32), 16, root));
}

TEST(BlockHashTest, HashesFollowTheChain) {
  const std::vector<int32_t> tokens = Iota(64);
  const uint64_t root = RootBlockHash({.model = "m", .lora = "", .cache_salt = ""});
  const std::vector<uint64_t> hashes = HashFullBlocks(tokens, 16, root);
  ASSERT_EQ(hashes.size(), 4u);
  const std::span<const int32_t> all(tokens);
  EXPECT_EQ(hashes[0], ChainBlockHash(root, all.subspan(0, 16)));
  for (size_t i = 1; i < hashes.size(); ++i) {
    EXPECT_EQ(hashes[i], ChainBlockHash(hashes[i - 1], all.subspan(16 * i, 16))) << i;
  }
}

TEST(BlockHashTest, SharedPrefixSharesBlockHashes) {
  std::vector<int32_t> a = Iota(64);
  std::vector<int32_t> b = a;
  b[40] = 5;  // inside block 2
  const std::vector<uint64_t> ha = HashFullBlocks(a, 16, 1);
  const std::vector<uint64_t> hb = HashFullBlocks(b, 16, 1);
  EXPECT_EQ(ha[0], hb[0]);
  EXPECT_EQ(ha[1], hb[1]);
  EXPECT_NE(ha[2], hb[2]);
  EXPECT_NE(ha[3], hb[3]);  // identical block, different parent
}

TEST(BlockHashTest, ChangingAnEarlyTokenChangesEveryLaterBlock) {
  const std::vector<int32_t> a = Iota(160);
  std::vector<int32_t> b = a;
  b[3] += 1;
  const std::vector<uint64_t> ha = HashFullBlocks(a, 16, 1);
  const std::vector<uint64_t> hb = HashFullBlocks(b, 16, 1);
  ASSERT_EQ(ha.size(), 10u);
  for (size_t i = 0; i < ha.size(); ++i) EXPECT_NE(ha[i], hb[i]) << i;
}

TEST(BlockHashTest, DifferentRootsIsolateEveryBlock) {
  const std::vector<int32_t> tokens = Iota(160);
  const std::vector<uint64_t> base =
      HashFullBlocks(tokens, 16, RootBlockHash({.model = "m", .lora = "", .cache_salt = ""}));
  for (const BlockHashKey& key :
       {BlockHashKey{.model = "m", .lora = "", .cache_salt = "tenant"},
        BlockHashKey{.model = "m2", .lora = "", .cache_salt = ""},
        BlockHashKey{.model = "m", .lora = "adapter", .cache_salt = ""}}) {
    const std::vector<uint64_t> other = HashFullBlocks(tokens, 16, RootBlockHash(key));
    ASSERT_EQ(other.size(), base.size());
    for (size_t i = 0; i < base.size(); ++i) EXPECT_NE(base[i], other[i]) << i;
  }
}

TEST(BlockHashTest, BlockSizeChangesTheBlocks) {
  const std::vector<int32_t> tokens = Iota(64);
  const std::vector<uint64_t> h16 = HashFullBlocks(tokens, 16, 1);
  const std::vector<uint64_t> h32 = HashFullBlocks(tokens, 32, 1);
  ASSERT_EQ(h16.size(), 4u);
  ASSERT_EQ(h32.size(), 2u);
  EXPECT_NE(h16[1], h32[0]);
  std::set<uint64_t> distinct(h16.begin(), h16.end());
  EXPECT_EQ(distinct.size(), h16.size());
}

TEST(BlockHashDeathTest, NonPositiveBlockSizeCrashes) {
  const std::vector<int32_t> tokens = Iota(4);
  EXPECT_DEATH(HashFullBlocks(tokens, 0, 1), "block_size");
}

}  // namespace
}  // namespace warmroute::request
