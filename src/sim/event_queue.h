// The simulator's agenda: a binary min-heap of timed events with deterministic tie-breaking.
// Events at the same virtual time pop in the order they were pushed (a sequence number breaks
// ties), so a run never depends on the heap's internal layout.
//
// Usage:
//   EventQueue<MyEvent> q;
//   q.Push(t, MyEvent{...});
//   while (!q.empty()) { auto [time, event] = q.Pop(); ... }
//
// Thread-safety: none; one owner (the simulation loop).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace warmroute::sim {

template <typename Event>
class EventQueue {
 public:
  void Push(TimePoint time, Event event) {
    heap_.push_back(Entry{time, next_seq_++, std::move(event)});
    std::push_heap(heap_.begin(), heap_.end());
  }

  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }

  // The earliest event's time. REQUIRES: !empty().
  TimePoint TopTime() const { return heap_.front().time; }

  // Removes and returns the earliest event (the first pushed among equal times).
  // REQUIRES: !empty().
  std::pair<TimePoint, Event> Pop() {
    std::pop_heap(heap_.begin(), heap_.end());
    Entry top = std::move(heap_.back());
    heap_.pop_back();
    return {top.time, std::move(top.event)};
  }

 private:
  struct Entry {
    TimePoint time;
    uint64_t seq;
    Event event;
    // std::push_heap builds a max-heap: "less" means "later".
    bool operator<(const Entry& other) const {
      return time != other.time ? time > other.time : seq > other.seq;
    }
  };

  std::vector<Entry> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace warmroute::sim
