#include "common/adaptive_mutex.h"

#include <mutex>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace warmroute {
namespace {

// Threads that each add to a plain counter under the lock: every increment counts only if the
// lock excludes the others (a read-modify-write of a non-atomic value races otherwise).
TEST(AdaptiveMutexTest, ExcludesOtherThreads) {
  AdaptiveMutex mu;
  int64_t counter = 0;
  constexpr int kThreads = 4;
  constexpr int kIncrements = 200'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIncrements; ++i) {
        std::lock_guard lock(mu);
        volatile int64_t value = counter;  // a load and a store the lock must keep together
        counter = value + 1;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counter, int64_t{kThreads} * kIncrements);
}

TEST(AdaptiveMutexTest, TryLockFailsWhileHeld) {
  AdaptiveMutex mu;
  mu.lock();
  bool taken = true;
  std::thread([&] { taken = mu.try_lock(); }).join();
  EXPECT_FALSE(taken);
  mu.unlock();
  EXPECT_TRUE(mu.try_lock());
  mu.unlock();
}

}  // namespace
}  // namespace warmroute
