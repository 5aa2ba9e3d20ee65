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

bool PieceCache::Lookup(std::string_view piece, uint64_t hash, std::vector<int32_t>* ids) const {
  if (slots_.empty() || piece.size() > kMaxPieceBytes) return false;
  const Slot& slot = slots_[hash & mask_];
  if (slot.count == 0 || slot.hash != static_cast<uint32_t>(hash >> 32) ||
      slot.length != piece.size() || std::memcmp(slot.bytes, piece.data(), piece.size()) != 0) {
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
