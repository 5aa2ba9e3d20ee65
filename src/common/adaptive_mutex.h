// A mutex that spins for a moment before it puts a waiting thread to sleep: glibc's adaptive
// mutex (PTHREAD_MUTEX_ADAPTIVE_NP), as std::mutex's drop-in for std::lock_guard.
//
// For locks held a few microseconds by threads that each own a core, such as the gateway's
// routing state (router/backends.h), which every worker takes several times per request. A
// plain mutex sleeps at once when it finds the lock taken: a futex wait, a context switch and a
// futex wake, each of them a system call, on a lock that would have been free a microsecond
// later. Uncontended, it costs what std::mutex costs.
//
// Thread-safety: as std::mutex.
#pragma once

#include <pthread.h>

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

  void lock() { pthread_mutex_lock(&mu_); }
  void unlock() { pthread_mutex_unlock(&mu_); }
  bool try_lock() { return pthread_mutex_trylock(&mu_) == 0; }

 private:
  pthread_mutex_t mu_;
};

}  // namespace warmroute
