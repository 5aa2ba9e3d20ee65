// A bounded cache of the model's ids for each pre-token, one per thread (hf_tokenizer.h keeps
// one in a PerThread): most pre-tokens of a prompt (" the", ",", " function") were seen before,
// and a lookup costs far less than running the BPE merges again.
//
// A direct-mapped table of `capacity` slots (a power of two), each holding one pre-token of at
// most kMaxPieceBytes bytes and its at most kMaxIds ids inline: a pre-token goes to the slot its
// hash (XXH3) picks and replaces what was there. So memory is fixed once the table is made
// (64 bytes a slot), and lookups and inserts never allocate. Longer pre-tokens, or ones
// with more ids, are not cached.
//
// A slot is one cache line. The table (4 MB at 65536 slots) is mostly out of the CPU's caches
// between prompts: an encoder that knows its next pre-tokens asks for their slots first
// (Prefetch), so that their loads overlap instead of waiting one after the other.
//
// Usage:
//   PieceCache cache;
//   cache.set_capacity(65536);
//   for (piece : pieces) cache.Prefetch(PieceCache::Hash(piece));
//   if (!cache.Lookup(piece, &ids)) { Encode(piece, &fresh); cache.Insert(piece, fresh); }
//
// Thread-safety: none (one instance per thread).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "common/prefetch.h"

namespace warmroute::tokenize {

class PieceCache {
 public:
  static constexpr size_t kMaxPieceBytes = 22;
  static constexpr size_t kMaxIds = 7;

  // Empties the cache and gives it `slots` slots (rounded up to a power of two; 0: no cache).
  void set_capacity(size_t slots);
  size_t capacity() const { return capacity_; }

  // The hash that picks the slot of `piece`.
  static uint64_t Hash(std::string_view piece);
  // Starts loading the slot of the piece whose Hash is `hash` into the CPU's cache.
  void Prefetch(uint64_t hash) const {
    if (!slots_.empty()) PrefetchForRead(&slots_[hash & mask_]);
  }

  // Appends the cached ids of `piece` to `ids` and returns true, or returns false.
  bool Lookup(std::string_view piece, std::vector<int32_t>* ids) const {
    return Lookup(piece, Hash(piece), ids);
  }
  // The same with Hash(piece) given.
  bool Lookup(std::string_view piece, uint64_t hash, std::vector<int32_t>* ids) const;
  // Remembers the ids of `piece`, replacing what its slot held.
  void Insert(std::string_view piece, std::span<const int32_t> ids);

  size_t MemoryBytes() const { return slots_.capacity() * sizeof(Slot); }

 private:
  struct alignas(64) Slot {
    uint32_t hash = 0;  // the upper half of the pre-token's hash
    uint8_t length = 0;
    uint8_t count = 0;  // ids; 0: empty
    char bytes[kMaxPieceBytes];
    int32_t ids[kMaxIds];
  };

  size_t capacity_ = 0;  // what set_capacity was asked for
  size_t mask_ = 0;
  std::vector<Slot> slots_;
};

}  // namespace warmroute::tokenize
