#include "router/hot_prefixes.h"

#include <gtest/gtest.h>

namespace warmroute::router {
namespace {

using std::chrono::seconds;

routing::PrefixKey Key(uint64_t first, size_t blocks) {
  routing::PrefixKey key;
  for (size_t i = 0; i < blocks; ++i) key.block_hashes.push_back(first * 1000 + i + 1);
  return key;
}

TEST(HotPrefixesTest, ReportsTheLastCompleteWindowBusiestFirst) {
  ManualClock clock;
  HotPrefixes hot(clock, {.capacity = 16, .window = seconds(10)});
  for (int i = 0; i < 50; ++i) hot.Record(Key(1, 40), 3000);  // same first 16 blocks
  for (int i = 0; i < 20; ++i) hot.Record(Key(2, 4), 100);
  EXPECT_TRUE(hot.Top(10).empty());  // the first window is not complete yet
  clock.Set(TimePoint{} + seconds(10));
  std::vector<HotPrefix> top = hot.Top(10);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].id, HotPrefixes::IdOf(Key(1, 40)));
  EXPECT_DOUBLE_EQ(top[0].requests_per_s, 5.0);
  EXPECT_DOUBLE_EQ(top[0].prompt_tokens_per_s, 15000.0);
  EXPECT_DOUBLE_EQ(top[1].requests_per_s, 2.0);
  EXPECT_EQ(hot.Top(1).size(), 1u);
  // Prompts sharing their first 16 blocks are one prefix, whatever follows.
  EXPECT_EQ(HotPrefixes::IdOf(Key(1, 40)), HotPrefixes::IdOf(Key(1, 17)));
  EXPECT_NE(HotPrefixes::IdOf(Key(1, 40)), HotPrefixes::IdOf(Key(1, 15)));
  clock.Set(TimePoint{} + seconds(35));  // two idle windows: nothing is hot any more
  EXPECT_TRUE(hot.Top(10).empty());
}

TEST(HotPrefixesTest, SpaceSavingKeepsAHeavyHitterAmongManyUniquePrefixes) {
  ManualClock clock;
  HotPrefixes hot(clock, {.capacity = 8, .window = seconds(10)});
  for (uint64_t i = 0; i < 1000; ++i) {
    hot.Record(Key(100 + i, 2), 10);
    if (i % 4 == 0) hot.Record(Key(7, 20), 10);  // 250 of 1250
  }
  clock.Set(TimePoint{} + seconds(10));
  std::vector<HotPrefix> top = hot.Top(1);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].id, HotPrefixes::IdOf(Key(7, 20)));
  EXPECT_GE(top[0].requests_per_s, 25.0);
  EXPECT_LE(top[0].requests_per_s - top[0].error_requests_per_s, 25.0);
}

}  // namespace
}  // namespace warmroute::router
