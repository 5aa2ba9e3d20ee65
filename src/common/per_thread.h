// One instance of T per thread, for state that every worker thread updates on its hot path and
// that is only read now and then (metrics counted per request, read per scrape).
//
// Each thread updates its own instance, so threads on different cores write no cache line in
// common: a counter shared by the gateway's workers moves between the cores on every request
// (measured in docs/performance.md, "what two worker threads cost"). A reader visits every
// instance with ForEach and merges what it needs.
//
// Each instance has its own mutex. Its thread takes it for every update, uncontended unless a
// ForEach is reading that instance at the same moment; taking an uncontended mutex whose line
// this core already holds costs a few nanoseconds.
//
// An instance is made on a thread's first WithLocal and lives as long as the PerThread, so a
// thread that exits leaves what it counted to be read. A new thread that gets a finished
// thread's id (std::thread::id values are reused) takes over its instance.
//
// Usage:
//   PerThread<Counts> counts;
//   counts.WithLocal([](Counts& c) { ++c.requests; });          // on any thread
//   int64_t total = 0;
//   counts.ForEach([&](Counts& c) { total += c.requests; });     // on any thread
//
// Thread-safety: WithLocal and ForEach may be called from any thread at any time. The callback
// runs with that instance's mutex held: it must not call WithLocal or ForEach of the same
// PerThread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace warmroute {

template <typename T>
class PerThread {
 public:
  PerThread() : id_(NextId()) {}
  PerThread(const PerThread&) = delete;
  PerThread& operator=(const PerThread&) = delete;

  // Calls f(T&) with the calling thread's instance, under its mutex; returns what f returns.
  template <typename F>
  decltype(auto) WithLocal(F&& f) {
    Slot& slot = LocalSlot();
    std::lock_guard lock(slot.mu);
    return f(slot.value);
  }

  // Calls f(T&) with every thread's instance in turn, each under its own mutex.
  template <typename F>
  void ForEach(F&& f) {
    std::lock_guard lock(mu_);
    for (const std::unique_ptr<Slot>& slot : slots_) {
      std::lock_guard slot_lock(slot->mu);
      f(slot->value);
    }
  }

 private:
  // A cache line of its own, so that two threads' instances never share one.
  struct alignas(64) Slot {
    std::mutex mu;
    T value{};
  };

  static uint64_t NextId() {
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(1, std::memory_order_relaxed);
  }

  // The calling thread's slot. The last PerThread<T> a thread used is remembered in two
  // thread-locals (its id, never reused, so a PerThread made where a destroyed one was cannot
  // be mistaken for it); switching between several goes through the map.
  Slot& LocalSlot() {
    thread_local uint64_t cached_id = 0;
    thread_local Slot* cached_slot = nullptr;
    if (cached_id == id_) return *cached_slot;
    std::lock_guard lock(mu_);
    Slot*& slot = by_thread_[std::this_thread::get_id()];
    if (slot == nullptr) {
      slots_.push_back(std::make_unique<Slot>());
      slot = slots_.back().get();
    }
    cached_id = id_;
    cached_slot = slot;
    return *slot;
  }

  const uint64_t id_;
  std::mutex mu_;  // guards slots_ and by_thread_ (not the instances)
  std::vector<std::unique_ptr<Slot>> slots_;
  std::map<std::thread::id, Slot*> by_thread_;
};

}  // namespace warmroute
