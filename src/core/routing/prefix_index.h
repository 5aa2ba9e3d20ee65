// The router's memory of which prefixes each backend holds: for a chain of block hashes
// (prefix_key.h), the longest matched prefix on every backend in one walk.
//
// Entries are (block hash, backend) pairs. Each backend's entries form an LRU list bounded by that
// backend's capacity in blocks (its KV capacity in tokens / tokens per block), so the index
// forgets what the engine must have evicted by now. Inserts happen at routing time (speculative:
// the request is on its way) and again when the engine confirms; removals come from KV events
// or closed-loop corrections (the engine reported fewer cached tokens than predicted: drop that
// backend's entries beyond what it actually had).
//
// Memory is accounted and bounded: at most `max_entries` entries in total. Global bound rule:
// while the backends' capacities add up to at most max_entries, each backend's bound is its
// capacity; beyond that every backend's bound is scaled down by the same factor,
//   bound(b) = floor(capacity(b) * max_entries / sum of capacities),
// so the bounds add up to at most max_entries and each backend keeps its most recently used share.
// (Rather than one global LRU: an engine only evicts under its own memory pressure, so a backend
// that is idle for a while still holds its prefixes and the index should keep remembering them;
// it also saves a second LRU list per entry.) Changing a capacity may shrink every bound and
// evicts each backend's least recently used entries down to its new bound at once.
// Each entry costs at most 64 bytes including the hash tables (at most 62.9; prefix_index.cc has
// the layout), and MemoryBytes() counts what is really allocated.
//
// Usage:
//   PrefixIndex index({.max_entries = 1 << 20});
//   index.SetCapacity(backend, capacity_blocks);
//   std::vector<int32_t> depth = index.Match(key.block_hashes);   // per backend, in blocks
//   index.Insert(backend, key.block_hashes);                       // marks the chain as held
//   index.Truncate(backend, key.block_hashes, achieved_blocks);    // closed-loop correction
//
// Thread-safety: none; one owner (a router strand or the simulator's loop).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace warmroute::routing {

using BackendId = uint32_t;  // dense, 0..N-1

struct PrefixIndexOptions {
  size_t max_entries = size_t{1} << 22;  // about 4M (hash, backend) pairs; at most 2^30
};

class PrefixIndex {
 public:
  explicit PrefixIndex(PrefixIndexOptions options);
  ~PrefixIndex();
  PrefixIndex(const PrefixIndex&) = delete;
  PrefixIndex& operator=(const PrefixIndex&) = delete;

  // Sets (or changes) a backend's LRU bound in blocks; 0 removes all its entries and the bound
  // (a removed backend). Shrinking evicts its least recently used entries.
  void SetCapacity(BackendId backend, int64_t capacity_blocks);

  // For every backend b < NumBackends(): the number of leading hashes of `chain` it holds
  // (stops at its first missing block). Touches nothing (a lookup is not a use). Cost, up to 64
  // backends: a search of about 8 probes per round and per distinct depth, log9(chain length)
  // rounds (three for 256 blocks), each round's probes in flight together; but one probe per
  // block up to the deepest match while a backend holding the chain's first block may hold blocks
  // whose parent it lost (after a Truncate or Remove, until eviction has gone past them: see
  // prefix_index.cc). Beyond 64 backends, that walk, with one more probe per backend still
  // matching.
  std::vector<int32_t> Match(std::span<const uint64_t> chain) const;
  // The same into `depth` (resized to NumBackends()), reusing its memory.
  void Match(std::span<const uint64_t> chain, std::vector<int32_t>& depth) const;

  // Marks every block of `chain` as held by `backend` and most recently used. Entries are
  // touched from the last block to the first, so a chain's head is fresher than its tail and the
  // LRU evicts tails first, as the engine does; when the chain is longer than the backend's
  // bound, its first `bound` blocks are kept. A backend whose bound is 0 (no capacity set, or a
  // zero share of max_entries) stores nothing. Cost: O(1) per block, however many backends hold
  // it; Truncate and Remove likewise.
  // `held_hint`: how many leading blocks of `chain` the backend held when Match last looked (the
  // router's matched depth). It only makes the walk faster (those blocks are looked up first and
  // moved to the front as whole stretches of the LRU list, usually without relinking a block);
  // the result is the same whatever it says, for a chain whose hashes are distinct (a prefix
  // chain's are; with a repeated hash the list stays well formed but its order may differ).
  void Insert(BackendId backend, std::span<const uint64_t> chain, size_t held_hint = 0);

  // Drops `backend`'s entries for chain[keep_blocks:] (it did not have them).
  void Truncate(BackendId backend, std::span<const uint64_t> chain, size_t keep_blocks);

  // Removes single blocks from one backend (KV event BlockRemoved), or everything it holds.
  void Remove(BackendId backend, std::span<const uint64_t> hashes);
  void Clear(BackendId backend);

  // 1 + the largest backend id ever given a capacity (ids are dense, so: the fleet size).
  size_t NumBackends() const;
  size_t entries() const;
  size_t entries(BackendId backend) const;
  // The backend's current LRU bound in blocks (its capacity, scaled down by the global bound).
  size_t bound(BackendId backend) const;
  // Bytes held by the index's own structures (entries, hash table, per-backend lists).
  size_t MemoryBytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace warmroute::routing
