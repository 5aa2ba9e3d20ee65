// PrefixCache::Find against a brute-force search over every remembered text: a hit is always
// valid (the remembered text equals the new one on the checkpoint's cut + window bytes), and it
// is as good as the best text's block-aligned prefix allows.
#include "core/tokenize/prefix_cache.h"

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace warmroute::tokenize {
namespace {

constexpr size_t kBlock = PrefixCache::kBlockBytes;

// A remembered text: checkpoints every `step` bytes (window 4); id j of text t is t * 100000 + j,
// and checkpoint at cut c has c ids before it, so a hit names its text and its cut.
struct Remembered {
  std::string bytes;
  std::vector<PrefixCache::Checkpoint> checkpoints;
};

Remembered Remember(PrefixCache& cache, int t, std::string bytes, size_t step) {
  Remembered r{std::move(bytes), {}};
  std::vector<int32_t> ids(r.bytes.size());
  for (size_t j = 0; j < ids.size(); ++j) ids[j] = t * 100000 + static_cast<int32_t>(j);
  for (size_t cut = step; cut < r.bytes.size(); cut += step) {
    r.checkpoints.push_back(
        {.cut = static_cast<uint32_t>(cut), .ids = static_cast<uint32_t>(cut), .in_segment = true});
  }
  cache.Remember(r.bytes, ids, r.checkpoints, [](size_t) { return 4; });
  return r;
}

size_t Common(const std::string& a, const std::string& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// The cut of the last checkpoint of `r` whose cut + window fits in `limit` bytes, or 0.
size_t BestCut(const Remembered& r, size_t limit) {
  size_t best = 0;
  for (const PrefixCache::Checkpoint& c : r.checkpoints) {
    if (c.cut + 4 <= limit) best = std::max<size_t>(best, c.cut);
  }
  return best;
}

std::string RandomText(std::mt19937& rng, size_t size) {
  std::uniform_int_distribution<int> letter('a', 'd');
  std::string s(size, ' ');
  for (char& c : s) c = static_cast<char>(letter(rng));
  return s;
}

TEST(PrefixCacheTest, RestartsFromTheTextThatSharesMost) {
  PrefixCache cache({});
  std::mt19937 rng(3);
  const std::string system = RandomText(rng, 11'500);
  // An older text with the system prompt and a question, a newer one that shares less.
  const Remembered a = Remember(cache, 1, system + RandomText(rng, 600), 100);
  Remember(cache, 2, system.substr(0, 5000) + RandomText(rng, 7000), 100);
  const std::string query = system + RandomText(rng, 500);
  const std::optional<PrefixCache::Hit> hit = cache.Find(query);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->ids->front() / 100000, 1);
  EXPECT_EQ(hit->checkpoint.cut, BestCut(a, Common(a.bytes, query)));
  EXPECT_EQ(cache.hits(), 1u);
}

TEST(PrefixCacheTest, MissesWhenNoTextSharesABlock) {
  PrefixCache cache({});
  std::mt19937 rng(4);
  Remember(cache, 1, RandomText(rng, 4000), 100);
  EXPECT_FALSE(cache.Find(RandomText(rng, 4000)).has_value());
  EXPECT_FALSE(cache.Find(std::string(kBlock - 1, 'a')).has_value());
  EXPECT_EQ(cache.hits(), 0u);
}

// Texts grown from a few bases (turns of chats that share system prompts, at every offset within
// a block), queries that part from them anywhere.
TEST(PrefixCacheTest, FindsAValidRestartAsGoodAsTheBestTextsAlignedPrefix) {
  for (const size_t step : {37u, 100u, 700u}) {
    PrefixCache cache({});
    std::mt19937 rng(static_cast<unsigned>(step));
    std::vector<std::string> bases;
    for (int b = 0; b < 3; ++b) bases.push_back(RandomText(rng, 6000));
    std::vector<Remembered> texts;
    std::uniform_int_distribution<size_t> cut(0, 6000);
    for (int t = 0; t < 40; ++t) {
      const std::string& base = bases[t % bases.size()];
      const size_t keep = cut(rng);
      texts.push_back(
          Remember(cache, t, base.substr(0, keep) + RandomText(rng, 1500 + cut(rng) / 4), step));
    }
    for (int q = 0; q < 400; ++q) {
      const std::string& base = bases[q % bases.size()];
      const std::string query = base.substr(0, cut(rng)) + RandomText(rng, cut(rng) / 3);
      size_t best_common = 0;
      for (const Remembered& r : texts) best_common = std::max(best_common, Common(r.bytes, query));
      const size_t aligned = best_common / kBlock * kBlock;
      size_t best_cut = 0;
      for (const Remembered& r : texts) {
        best_cut = std::max(best_cut, BestCut(r, std::min(aligned, Common(r.bytes, query))));
      }
      const std::optional<PrefixCache::Hit> hit = cache.Find(query);
      if (!hit.has_value()) {
        EXPECT_EQ(best_cut, 0u) << "step " << step << " query " << q;
        continue;
      }
      const Remembered& r = texts[hit->ids->front() / 100000];
      ASSERT_EQ(hit->checkpoint.ids, hit->checkpoint.cut);
      EXPECT_LE(hit->checkpoint.cut + hit->checkpoint.window, Common(r.bytes, query));
      EXPECT_EQ(hit->checkpoint.window, 4u);
      EXPECT_GE(hit->checkpoint.cut, best_cut) << "step " << step << " query " << q;
    }
  }
}

}  // namespace
}  // namespace warmroute::tokenize
