#include "common/per_thread.h"

#include <gtest/gtest.h>

#include <optional>
#include <thread>
#include <vector>

namespace warmroute {
namespace {

struct Counts {
  int64_t n = 0;
};

int64_t Total(PerThread<Counts>& counts, int* instances = nullptr) {
  int64_t total = 0;
  int seen = 0;
  counts.ForEach([&](Counts& c) {
    total += c.n;
    ++seen;
  });
  if (instances != nullptr) *instances = seen;
  return total;
}

TEST(PerThreadTest, EachThreadCountsInItsOwnInstanceAndNothingIsLost) {
  PerThread<Counts> counts;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&counts] {
      for (int i = 0; i < 100'000; ++i) counts.WithLocal([](Counts& c) { ++c.n; });
    });
  }
  // Read while the threads count: every read is a consistent sum of whole updates.
  int64_t last = 0;
  for (int i = 0; i < 100; ++i) {
    const int64_t now = Total(counts);
    EXPECT_GE(now, last);
    last = now;
  }
  for (std::thread& t : threads) t.join();
  int instances = 0;
  // The threads have exited: what they counted is still there.
  EXPECT_EQ(Total(counts, &instances), 400'000);
  EXPECT_EQ(instances, 4);
}

TEST(PerThreadTest, TwoPerThreadsOnOneThreadAreSeparate) {
  PerThread<Counts> a;
  PerThread<Counts> b;
  for (int i = 0; i < 10; ++i) {
    a.WithLocal([](Counts& c) { c.n += 1; });
    b.WithLocal([](Counts& c) { c.n += 100; });
  }
  int instances = 0;
  EXPECT_EQ(Total(a, &instances), 10);
  EXPECT_EQ(instances, 1);
  EXPECT_EQ(Total(b), 1000);
}

TEST(PerThreadTest, ANewPerThreadStartsEmptyWhereADestroyedOneWas) {
  for (int round = 0; round < 3; ++round) {
    // Likely at the same address each round: the thread's remembered instance must not carry over.
    std::optional<PerThread<Counts>> counts(std::in_place);
    EXPECT_EQ(counts->WithLocal([](Counts& c) { return ++c.n; }), 1);
  }
}

}  // namespace
}  // namespace warmroute
