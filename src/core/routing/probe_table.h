// An open-addressing hash table of plain slots for large, randomly accessed indexes: linear
// probing, backward-shift deletion (no tombstones), the load factor kept between 0.56 and 0.7
// (it grows by 1.25x when an Add would pass 0.7, and never shrinks). Inserts, erasures and
// lookups of absent keys scan to the end of a probe run, about (1 + 1 / (1 - load)^2) / 2 slots:
// 6 at 0.7, 13 at 0.8 (with a growth threshold of 0.8, applying KV events, all inserts and
// erasures, ran at two thirds of the speed at 524,288 blocks, where the tables sat at 0.79:
// kv_events_bench.cc). A slot's home is derived
// from its 32-bit key(); arrays of two huge pages or more are 2 MiB-aligned and asked for
// transparent huge pages (every probe is a random access, and with 4 KiB pages also a TLB miss).
// Lookups can be prefetched (Prefetch) well before they are made. Used by the prefix index's
// tables (prefix_index.cc) and the KV event writer's engine-hash map (block_index_writer.h).
//
// Slot requirements: a trivially copyable struct with
//   static constexpr Slot Empty();   // the value of an empty slot
//   bool empty() const;              // true only for Empty()
//   uint32_t key() const;            // well mixed (Mix32), fixed while the slot is in the table
//
// Usage:
//   ProbeTable<MySlot> table(1024);
//   table.Prefetch(Mix32(hash));                            // ... other work, then:
//   size_t s = table.Find(Mix32(hash), [&](const MySlot& x) { return x.hash == hash; });
//   if (s == kNoSlot) table.Add({.hash = hash, ...}); else table.Erase(s);
//
// Thread-safety: none; one owner.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <utility>

#include "common/prefetch.h"

namespace warmroute::routing {

constexpr size_t kNoSlot = ~size_t{0};

// 32 well-mixed bits of a 64-bit hash, for Slot::key() (block hashes are XXH3 outputs, but KV
// events and tests may hand us small integers).
inline uint32_t Mix32(uint64_t x) {
  return static_cast<uint32_t>(((x ^ (x >> 29)) * 0x9e3779b97f4a7c15ull) >> 32);
}

template <typename Slot>
class ProbeTable {
 public:
  explicit ProbeTable(size_t size) : size_(size) {
    constexpr size_t kHugePage = size_t{2} << 20;
    const size_t bytes = size * sizeof(Slot);
    // Huge pages from two on; the tail that does not fill a huge page stays in small pages.
    const size_t alignment = bytes >= 2 * kHugePage ? kHugePage : 64;
    void* memory = nullptr;
    if (posix_memalign(&memory, alignment, bytes) != 0) {
      std::fprintf(stderr, "ProbeTable: out of memory for %zu slots\n", size);
      std::abort();
    }
    slots_.reset(static_cast<Slot*>(memory));
    if (alignment == kHugePage) madvise(memory, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);
    allocated_bytes_ = bytes;
    std::uninitialized_fill_n(slots_.get(), size, Slot::Empty());
  }

  size_t allocated_bytes() const { return allocated_bytes_; }
  size_t used() const { return used_; }
  Slot& operator[](size_t i) { return slots_[i]; }
  const Slot& operator[](size_t i) const { return slots_[i]; }

  // The first slot from key's home on for which matches(slot) holds, or kNoSlot.
  template <typename Matches>
  size_t Find(uint32_t key, Matches matches) const {
    for (size_t i = Home(key);;) {
      const Slot& slot = slots_[i];
      if (slot.empty()) return kNoSlot;
      if (matches(slot)) return i;
      if (++i == size_) i = 0;
    }
  }

  // Prefetches the first two cache lines of key's probe run (a lookup of an absent key reads
  // about six slots; prefetching only the first line left half of those lookups a miss).
  void Prefetch(uint32_t key) const {
    const char* home = reinterpret_cast<const char*>(&slots_[Home(key)]);
    PrefetchForRead(home);
    PrefetchForRead(home + 64);
  }

  // Adds a non-empty slot whose key is not in the table yet; grows the table first if needed.
  void Add(const Slot& slot) {
    if (10 * (used_ + 1) > 7 * size_) {  // past 0.7
      ProbeTable bigger(size_ + size_ / 4);
      for (size_t i = 0; i < size_; ++i) {
        if (!slots_[i].empty()) bigger.Place(slots_[i]);
      }
      *this = std::move(bigger);
    }
    Place(slot);
  }

  // Backward-shift deletion: later slots of the probe run move back so no lookup stops early.
  void Erase(size_t hole) {
    for (size_t j = hole;;) {
      if (++j == size_) j = 0;
      if (slots_[j].empty()) break;
      const size_t home = Home(slots_[j].key());
      // The slot at j may fill the hole unless its home lies cyclically in (hole, j].
      const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (!stays) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = Slot::Empty();
    --used_;
  }

 private:
  size_t Home(uint32_t key) const { return (uint64_t{key} * size_) >> 32; }

  void Place(const Slot& slot) {
    size_t i = Home(slot.key());
    while (!slots_[i].empty()) {
      if (++i == size_) i = 0;
    }
    slots_[i] = slot;
    ++used_;
  }

  struct Free {
    void operator()(Slot* p) const { std::free(p); }
  };
  std::unique_ptr<Slot[], Free> slots_;
  size_t size_ = 0;
  size_t used_ = 0;
  size_t allocated_bytes_ = 0;
};

}  // namespace warmroute::routing
