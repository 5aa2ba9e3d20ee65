// A mutex that spins for a moment before it puts a waiting thread to sleep: glibc's adaptive
// mutex (PTHREAD_MUTEX_ADAPTIVE_NP), as std::mutex's drop-in for std::lock_guard.
//
// For locks held a few microseconds by threads that each own a core, such as the gateway's
// routing state (gateway/fleet/backends.h), which every worker takes several times per request. A
// plain mutex sleeps at once when it finds the lock taken: a futex wait, a context switch and a
// futex wake, each of them a system call, on a lock that would have been free a microsecond
// later. Uncontended, it costs what std::mutex costs.
//
// It also counts how often a lock() found the mutex taken and how long those waited (spinning or
// asleep), so that contention on such a lock can be watched (the gateway exports the routing
// lock's on /metrics). The uncontended path is a try-lock, the same one atomic exchange as a lock;
// only a waiting lock() reads the clock.
//
// Thread-safety: as std::mutex; contention() may be called from any thread at any time.
#pragma once

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>

namespace warmroute {

class AdaptiveMutex {
 public:
  AdaptiveMutex() {
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&mu_, &attr);
    pthread_mutexattr_destroy(&attr);
  }
  ~AdaptiveMutex() { pthread_mutex_destroy(&mu_); }
  AdaptiveMutex(const AdaptiveMutex&) = delete;
  AdaptiveMutex& operator=(const AdaptiveMutex&) = delete;

  void lock() {
    if (pthread_mutex_trylock(&mu_) == 0) return;
    const auto start = std::chrono::steady_clock::now();
    pthread_mutex_lock(&mu_);
    const auto waited = std::chrono::steady_clock::now() - start;
    // Written while holding the mutex, so never by two threads at once; atomic for the readers.
    contended_.store(contended_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    wait_ns_.store(wait_ns_.load(std::memory_order_relaxed) +
                       static_cast<uint64_t>(
                           std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count()),
                   std::memory_order_relaxed);
  }
  void unlock() { pthread_mutex_unlock(&mu_); }
  bool try_lock() { return pthread_mutex_trylock(&mu_) == 0; }

  struct Contention {
    uint64_t waits = 0;    // lock() calls that found the mutex taken
    uint64_t wait_ns = 0;  // their time from the call to holding the mutex, in total
  };
  // Counts since construction (each only grows; the two are read one after the other).
  Contention contention() const {
    return {.waits = contended_.load(std::memory_order_relaxed),
            .wait_ns = wait_ns_.load(std::memory_order_relaxed)};
  }

 private:
  pthread_mutex_t mu_;
  std::atomic<uint64_t> contended_{0};
  std::atomic<uint64_t> wait_ns_{0};
};

}  // namespace warmroute
