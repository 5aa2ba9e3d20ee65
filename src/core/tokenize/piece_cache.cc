#include "core/tokenize/piece_cache.h"

#include <algorithm>
#include <bit>
#include <cstring>

#define XXH_INLINE_ALL  // pre-tokens are a few bytes: an inlined XXH3 beats a library call
#include "xxhash.h"

namespace warmroute::tokenize {

void PieceCache::set_capacity(size_t slots) {
  capacity_ = slots;
  slots_.clear();
  slots_.shrink_to_fit();
  if (slots == 0) return;
  slots_.resize(std::bit_ceil(slots));
  mask_ = slots_.size() - 1;
}

uint64_t PieceCache::Hash(std::string_view piece) {
  return XXH3_64bits(piece.data(), piece.size());
}

namespace {

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Whether the n bytes at a and b are equal, for n <= 24, with a few overlapping loads that
// never read past either end (a pre-token can end a text at the end of a page): a library
// memcmp call cost more than the compare for pre-tokens of a few bytes.
bool EqualShort(const char* a, const char* b, size_t n) {
  if (n >= 8) {
    const bool ends = Load<uint64_t>(a) == Load<uint64_t>(b) &&
                      Load<uint64_t>(a + n - 8) == Load<uint64_t>(b + n - 8);
    return n <= 16 ? ends : ends && Load<uint64_t>(a + 8) == Load<uint64_t>(b + 8);
  }
  if (n >= 4) {
    return Load<uint32_t>(a) == Load<uint32_t>(b) &&
           Load<uint32_t>(a + n - 4) == Load<uint32_t>(b + n - 4);
  }
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

}  // namespace

bool PieceCache::Lookup(std::string_view piece, uint64_t hash, std::vector<int32_t>* ids) const {
  static_assert(kMaxPieceBytes <= 24, "EqualShort compares at most 24 bytes");
  if (slots_.empty() || piece.size() > kMaxPieceBytes) return false;
  const Slot& slot = slots_[hash & mask_];
  if (slot.count == 0 || slot.hash != static_cast<uint32_t>(hash >> 32) ||
      slot.length != piece.size() || !EqualShort(slot.bytes, piece.data(), piece.size())) {
    return false;
  }
  ids->insert(ids->end(), slot.ids, slot.ids + slot.count);
  return true;
}

void PieceCache::Insert(std::string_view piece, std::span<const int32_t> ids) {
  if (slots_.empty() || piece.size() > kMaxPieceBytes || ids.empty() || ids.size() > kMaxIds) {
    return;
  }
  const uint64_t hash = Hash(piece);
  Slot& slot = slots_[hash & mask_];
  slot.hash = static_cast<uint32_t>(hash >> 32);
  slot.length = static_cast<uint8_t>(piece.size());
  slot.count = static_cast<uint8_t>(ids.size());
  std::memcpy(slot.bytes, piece.data(), piece.size());
  std::copy(ids.begin(), ids.end(), slot.ids);
}

}  // namespace warmroute::tokenize
