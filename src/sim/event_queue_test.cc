#include "sim/event_queue.h"

#include <chrono>
#include <string>

#include "gtest/gtest.h"

namespace warmroute::sim {
namespace {

TimePoint At(int ms) { return TimePoint{} + std::chrono::milliseconds(ms); }

TEST(EventQueueTest, PopsInTimeOrder) {
  EventQueue<int> q;
  q.Push(At(30), 3);
  q.Push(At(10), 1);
  q.Push(At(20), 2);
  EXPECT_EQ(q.TopTime(), At(10));
  EXPECT_EQ(q.Pop().second, 1);
  EXPECT_EQ(q.Pop().second, 2);
  auto [time, value] = q.Pop();
  EXPECT_EQ(time, At(30));
  EXPECT_EQ(value, 3);
  EXPECT_TRUE(q.empty());
}

TEST(EventQueueTest, BreaksTiesByPushOrder) {
  EventQueue<std::string> q;
  for (int i = 0; i < 100; ++i) q.Push(At(i % 3), std::to_string(i));
  for (int t = 0; t < 3; ++t) {
    for (int i = t; i < 100; i += 3) {
      auto [time, value] = q.Pop();
      ASSERT_EQ(time, At(t));
      ASSERT_EQ(value, std::to_string(i));
    }
  }
  EXPECT_TRUE(q.empty());
}

}  // namespace
}  // namespace warmroute::sim
