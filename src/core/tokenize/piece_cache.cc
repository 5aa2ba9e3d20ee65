#include "core/tokenize/piece_cache.h"

#include <utility>

namespace warmroute::tokenize {

bool PieceCache::Lookup(std::string_view piece, std::vector<int32_t>* ids) {
  if (const auto it = young_.index.find(piece); it != young_.index.end()) {
    const auto [offset, count] = it->second;
    ids->insert(ids->end(), young_.ids.begin() + offset, young_.ids.begin() + offset + count);
    return true;
  }
  const auto it = old_.index.find(piece);
  if (it == old_.index.end()) return false;
  const auto [offset, count] = it->second;
  const size_t first = ids->size();
  ids->insert(ids->end(), old_.ids.begin() + offset, old_.ids.begin() + offset + count);
  Insert(piece, std::span<const int32_t>(ids->data() + first, count));
  return true;
}

void PieceCache::Insert(std::string_view piece, std::span<const int32_t> ids) {
  if (capacity_ < 2 || piece.size() > kMaxPieceBytes) return;
  if (young_.index.size() >= capacity_ / 2) {
    old_ = std::move(young_);
    young_ = Generation();
  }
  const auto offset = static_cast<uint32_t>(young_.ids.size());
  if (!young_.index.try_emplace(piece, offset, static_cast<uint32_t>(ids.size())).second) return;
  young_.ids.insert(young_.ids.end(), ids.begin(), ids.end());
}

size_t PieceCache::MemoryBytes() const {
  size_t bytes = 0;
  for (const Generation* g : {&young_, &old_}) {
    bytes += g->index.capacity() * (sizeof(std::string) + 8 + 1) + g->ids.capacity() * 4;
    for (const auto& [key, value] : g->index) bytes += key.capacity() > 15 ? key.capacity() : 0;
  }
  return bytes;
}

}  // namespace warmroute::tokenize
