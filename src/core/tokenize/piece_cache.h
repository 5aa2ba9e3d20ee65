// A bounded cache of the model's ids for each pre-token, one per thread (hf_tokenizer.h keeps
// one in a PerThread): most pre-tokens of a prompt (" the", ",", " function") were seen before,
// and a lookup costs far less than running the BPE merges again.
//
// Bounded by entries: two generations of at most capacity/2 entries each. A hit in the old
// generation moves the entry to the young one; when the young one is full, the old one is
// dropped and the young one becomes old. So an entry that is used survives and memory stays
// within `capacity` entries of at most kMaxPieceBytes bytes each.
//
// Usage:
//   PieceCache cache;
//   cache.set_capacity(65536);
//   if (!cache.Lookup(piece, &ids)) { Encode(piece, &fresh); cache.Insert(piece, fresh); }
//
// Thread-safety: none (one instance per thread).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/tokenize/string_map.h"

namespace warmroute::tokenize {

class PieceCache {
 public:
  static constexpr size_t kMaxPieceBytes = 256;  // longer pre-tokens are not cached

  void set_capacity(size_t entries) { capacity_ = entries; }
  size_t capacity() const { return capacity_; }

  // Appends the cached ids of `piece` to `ids` and returns true, or returns false.
  bool Lookup(std::string_view piece, std::vector<int32_t>* ids);
  // Remembers the ids of `piece` (REQUIRES: not cached).
  void Insert(std::string_view piece, std::span<const int32_t> ids);

  size_t size() const { return young_.index.size() + old_.index.size(); }
  size_t MemoryBytes() const;

 private:
  struct Generation {
    // piece -> (offset, count) in ids
    StringMap<std::pair<uint32_t, uint32_t>> index;
    std::vector<int32_t> ids;
  };

  size_t capacity_ = 0;
  Generation young_;
  Generation old_;
};

}  // namespace warmroute::tokenize
