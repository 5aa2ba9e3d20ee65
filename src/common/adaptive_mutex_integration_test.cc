#include "common/adaptive_mutex.h"

#include <atomic>
#include <chrono>
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

TEST(AdaptiveMutexTest, UncontendedLocksAreNotCounted) {
  AdaptiveMutex mu;
  for (int i = 0; i < 1000; ++i) {
    std::lock_guard lock(mu);
  }
  EXPECT_EQ(mu.contention().waits, 0u);
  EXPECT_EQ(mu.contention().wait_ns, 0u);
}

// A lock() that finds the mutex held counts once, with the time it waited: more than nothing, and
// no more than the holder kept it plus the waiter's own start.
TEST(AdaptiveMutexTest, AWaitingLockIsCountedWithItsWait) {
  AdaptiveMutex mu;
  std::atomic<bool> about_to_lock = false;
  const auto start = std::chrono::steady_clock::now();
  mu.lock();
  std::thread waiter([&] {
    about_to_lock = true;
    std::lock_guard lock(mu);
  });
  while (!about_to_lock) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the waiter finds it held
  mu.unlock();
  waiter.join();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  const AdaptiveMutex::Contention contention = mu.contention();
  EXPECT_EQ(contention.waits, 1u);
  EXPECT_GT(contention.wait_ns, 0u);
  EXPECT_LE(
      contention.wait_ns,
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()));
}

}  // namespace
}  // namespace warmroute
