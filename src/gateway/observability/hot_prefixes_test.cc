#include "gateway/observability/hot_prefixes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <thread>

namespace warmroute::gateway {
namespace {

using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::Pair;

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

void OnAnotherThread(const std::function<void()>& f) {
  std::thread t(f);
  t.join();
}

// Requests/s and error requests/s of `top`, in its order.
std::vector<std::pair<double, double>> Rates(const std::vector<HotPrefix>& top) {
  std::vector<std::pair<double, double>> rates;
  for (const HotPrefix& p : top) rates.emplace_back(p.requests_per_s, p.error_requests_per_s);
  return rates;
}

TEST(HotPrefixesTest, CountsOfAllThreadsAddUp) {
  ManualClock clock;
  HotPrefixes hot(clock, {.capacity = 16, .window = seconds(10)});
  OnAnotherThread([&] {
    for (int i = 0; i < 30; ++i) hot.Record(Key(1, 20), 100);
    for (int i = 0; i < 10; ++i) hot.Record(Key(2, 20), 100);
  });
  for (int i = 0; i < 20; ++i) hot.Record(Key(1, 20), 100);
  for (int i = 0; i < 5; ++i) hot.Record(Key(3, 20), 100);
  clock.Set(TimePoint{} + seconds(10));
  std::vector<HotPrefix> top = hot.Top(10);
  ASSERT_THAT(Rates(top), ElementsAre(Pair(5.0, 0), Pair(1.0, 0), Pair(0.5, 0)));
  EXPECT_EQ(top[0].id, HotPrefixes::IdOf(Key(1, 20)));
  EXPECT_DOUBLE_EQ(top[0].prompt_tokens_per_s, 500.0);
  // A thread that counted in a later window only (after a Top) leaves the reported one alone.
  clock.Set(TimePoint{} + seconds(15));
  OnAnotherThread([&] { hot.Record(Key(1, 20), 100); });
  EXPECT_DOUBLE_EQ(hot.Top(1)[0].requests_per_s, 5.0);
  clock.Set(TimePoint{} + seconds(20));
  ASSERT_EQ(hot.Top(10).size(), 1u);
  EXPECT_DOUBLE_EQ(hot.Top(1)[0].requests_per_s, 0.1);
}

TEST(HotPrefixesTest, ReportsTheBusiestHomesOfAPrefixOverAllThreads) {
  ManualClock clock;
  HotPrefixes hot(clock, {.capacity = 16, .window = seconds(10)});
  const uint64_t id = HotPrefixes::IdOf(Key(1, 20));
  OnAnotherThread([&] {
    for (int i = 0; i < 6; ++i) hot.Record(id, 100, /*home=*/2);
    hot.Record(id, 100, /*home=*/7);
  });
  for (int i = 0; i < 4; ++i) hot.Record(id, 100, /*home=*/5);
  for (int i = 0; i < 3; ++i) hot.Record(id, 100, /*home=*/2);
  hot.Record(id, 100);  // no backend: counts for the prefix only
  // A fifth backend on this thread replaces the least busy of its four slots.
  hot.Record(id, 100, /*home=*/8);
  hot.Record(id, 100, /*home=*/9);
  hot.Record(id, 100, /*home=*/10);
  clock.Set(TimePoint{} + seconds(10));
  const std::vector<HotPrefix> top = hot.Top(1);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_DOUBLE_EQ(top[0].requests_per_s, 1.8);
  ASSERT_GE(top[0].homes.size(), 2u);
  EXPECT_LE(top[0].homes.size(), HotPrefixes::kHomes);
  EXPECT_EQ(top[0].homes[0], 2u);  // 9 requests
  EXPECT_EQ(top[0].homes[1], 5u);  // 4
}

TEST(HotPrefixesTest, AnIdMissingFromAFullThreadSummaryGetsThatSummarysBound) {
  ManualClock clock;
  HotPrefixes hot(clock, {.capacity = 2, .window = seconds(10)});
  OnAnotherThread([&] {
    for (int i = 0; i < 10; ++i) hot.Record(Key(1, 20), 0);
    for (int i = 0; i < 5; ++i) hot.Record(Key(2, 20), 0);  // full: 2 ids of capacity 2
  });
  for (int i = 0; i < 3; ++i) hot.Record(Key(3, 20), 0);  // not full: ids it lacks had none
  clock.Set(TimePoint{} + seconds(10));
  std::vector<HotPrefix> top = hot.Top(10);
  // Key 3: 3 counted, and up to 5 (the full summary's smallest) it may have had there.
  ASSERT_THAT(Rates(top), ElementsAre(Pair(1.0, 0), Pair(0.8, 0.5), Pair(0.5, 0)));
  EXPECT_EQ(top[0].id, HotPrefixes::IdOf(Key(1, 20)));
  EXPECT_EQ(top[1].id, HotPrefixes::IdOf(Key(3, 20)));
}

}  // namespace
}  // namespace warmroute::gateway
