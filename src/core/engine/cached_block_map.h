// The KV block manager's prefix-cache map: block hash -> the block holding it. Internal to the
// engine model (kv_block_manager.h).
//
// Why not absl::flat_hash_map: every engine of a simulated fleet has one of these maps, a few
// hundred KiB each, so at fleet scale nearly every probe is a cache miss. This map does one miss
// per operation instead of two (absl reads a control byte array, then the slot array), its slots
// are 8 bytes instead of 16, it never grows (a block holds at most one hash, so num_blocks
// bounds the size), and a caller that knows its next keys can prefetch their slots.
//
// Layout: open addressing with linear probing over 8-byte slots {tag, block}, where the tag is
// 32 bits of the mixed hash and determines the slot's home (so deletion never needs the
// hash); a tag match is confirmed against the block's own hash, which the caller keeps (the
// `hash_of` function). The table has 1.6 × capacity slots, a key's home chosen by
// multiply-shift (no power-of-two rounding), so the load stays at most 0.625 and a miss reads
// about 4 slots (32 bytes, linear probing's ½(1 + 1/(1 − α)²)) — usually one cache line.
// Deletion is by backward shift (no tombstones).
//
// Usage:
//   CachedBlockMap map(/*capacity=*/num_blocks);
//   map.Insert(hash, block, hash_of);        // hash_of(BlockId) -> uint64_t
//   BlockId b = map.Find(hash, hash_of);     // -1 when absent
//   map.Erase(hash, block);
//
// Thread-safety: none; one owner.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/prefetch.h"

namespace warmroute::engine {

class CachedBlockMap {
 public:
  using Block = int32_t;
  static constexpr Block kNone = -1;

  // REQUIRES: 0 < capacity < 2^30 (the slot count fits the 32-bit tag). At most `capacity` entries
  // are ever held at once.
  explicit CachedBlockMap(int64_t capacity)
      : capacity_(capacity),
        slots_(static_cast<size_t>(capacity + capacity * 3 / 5 + 1), Slot{0, kNone}) {}

  size_t size() const { return size_; }
  size_t allocated_bytes() const { return slots_.capacity() * sizeof(Slot); }

  // Brings the first slot of `hash`'s probe run towards the cache.
  void Prefetch(uint64_t hash) const { PrefetchForRead(&slots_[Home(Tag(Mix(hash)))]); }

  // The block holding `hash`, or kNone. hash_of(block) gives a block's hash.
  template <typename HashOf>
  Block Find(uint64_t hash, const HashOf& hash_of) const {
    const uint32_t tag = Tag(Mix(hash));
    for (uint64_t i = Home(tag);; i = Next(i)) {
      const Slot& slot = slots_[i];
      if (slot.block == kNone) return kNone;
      if (slot.tag == tag && hash_of(slot.block) == hash) return slot.block;
    }
  }

  // Maps `hash` to `block` unless `hash` is mapped already; returns the block now holding it.
  template <typename HashOf>
  Block Insert(uint64_t hash, Block block, const HashOf& hash_of) {
    const uint32_t tag = Tag(Mix(hash));
    uint64_t i = Home(tag);
    for (;; i = Next(i)) {
      const Slot& slot = slots_[i];
      if (slot.block == kNone) break;
      if (slot.tag == tag && hash_of(slot.block) == hash) return slot.block;
    }
    if (static_cast<int64_t>(size_) >= capacity_) {
      std::fprintf(stderr, "CachedBlockMap: more entries than the capacity of %lld\n",
                   static_cast<long long>(capacity_));
      std::abort();
    }
    slots_[i] = Slot{tag, block};
    ++size_;
    return block;
  }

  // Removes `hash` (which must be mapped to `block`).
  void Erase(uint64_t hash, Block block) {
    uint64_t hole = Home(Tag(Mix(hash)));
    while (slots_[hole].block != block) {
      if (slots_[hole].block == kNone) {
        std::fprintf(stderr, "CachedBlockMap: erasing an absent block %d\n", block);
        std::abort();
      }
      hole = Next(hole);
    }
    // Backward shift: a later slot of the run moves into the hole unless its home lies
    // cyclically in (hole, j].
    for (uint64_t j = hole;;) {
      j = Next(j);
      const Slot slot = slots_[j];
      if (slot.block == kNone) break;
      const uint64_t home = Home(slot.tag);
      if (Distance(home, j) >= Distance(hole, j)) {
        slots_[hole] = slot;
        hole = j;
      }
    }
    slots_[hole] = Slot{0, kNone};
    --size_;
  }

  // Calls f(block) for every mapped block, then empties the map.
  template <typename F>
  void Clear(const F& f) {
    for (Slot& slot : slots_) {
      if (slot.block != kNone) f(slot.block);
      slot = Slot{0, kNone};
    }
    size_ = 0;
  }

 private:
  struct Slot {
    uint32_t tag;
    Block block;  // kNone: empty
  };

  // Block hashes are XXH3 outputs, but tests hand in small integers: mix them.
  static uint64_t Mix(uint64_t x) {
    x ^= x >> 32;
    x *= 0x9e3779b97f4a7c15ull;
    return x ^ (x >> 29);
  }
  static uint32_t Tag(uint64_t m) { return static_cast<uint32_t>(m >> 32); }
  uint64_t Home(uint32_t tag) const { return (uint64_t{tag} * slots_.size()) >> 32; }
  uint64_t Next(uint64_t i) const { return i + 1 == slots_.size() ? 0 : i + 1; }
  // Steps from slot `from` forward (cyclically) to slot `to`.
  uint64_t Distance(uint64_t from, uint64_t to) const {
    return to >= from ? to - from : to + slots_.size() - from;
  }

  int64_t capacity_;
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace warmroute::engine
