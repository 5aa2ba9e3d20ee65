#include "core/tokenize/prefix_cache.h"

#include <cstring>
#include <mutex>

#include "xxhash.h"

namespace warmroute::tokenize {
namespace {

uint64_t ChainHash(uint64_t previous, std::string_view block) {
  return XXH3_64bits_withSeed(block.data(), block.size(), previous);
}

}  // namespace

std::optional<PrefixCache::Hit> PrefixCache::Find(std::string_view text) const {
  const size_t blocks = text.size() / kBlockBytes;
  if (blocks == 0) return std::nullopt;
  std::shared_lock lock(mu_);
  if (index_.empty()) return std::nullopt;
  const Entry* best = nullptr;
  uint64_t hash = 0;
  for (size_t k = 0; k < blocks; ++k) {
    hash = ChainHash(hash, text.substr(k * kBlockBytes, kBlockBytes));
    const auto it = index_.find(hash);
    if (it != index_.end()) best = &it->second;
  }
  if (best == nullptr) return std::nullopt;
  if (best->prefix_bytes > text.size() ||
      std::memcmp(best->text->bytes.data(), text.data(), best->prefix_bytes) != 0) {
    return std::nullopt;
  }
  hits_.fetch_add(1, std::memory_order_relaxed);
  return Hit{best->text->checkpoints[best->checkpoint], best->text->ids};
}

void PrefixCache::Remember(std::string_view text, std::vector<int32_t> ids,
                           const std::vector<Checkpoint>& checkpoints) {
  if (text.size() < options_.min_bytes || checkpoints.empty()) return;
  auto remembered = std::make_shared<Text>();
  remembered->bytes = std::string(text);
  remembered->ids = std::make_shared<const std::vector<int32_t>>(std::move(ids));
  // For each block boundary, the last checkpoint whose cut + window lies within it.
  std::vector<std::pair<uint64_t, Entry>> entries;
  uint64_t hash = 0;
  size_t next = 0;
  bool any = false;
  for (size_t k = 1; k * kBlockBytes <= text.size(); ++k) {
    const size_t end = k * kBlockBytes;
    hash = ChainHash(hash, text.substr(end - kBlockBytes, kBlockBytes));
    bool advanced = false;
    while (next < checkpoints.size() && checkpoints[next].cut + options_.window <= end) {
      ++next;
      advanced = true;
    }
    if (next == 0) continue;
    if (!advanced && any) {
      // The same checkpoint as the block before: index it only at its first block and then every
      // 16 blocks, so a text that parts from this one a little later still finds it.
      if (k % 16 != 0) continue;
    }
    any = true;
    entries.push_back(
        {hash, Entry{nullptr, static_cast<uint32_t>(next - 1), static_cast<uint32_t>(end)}});
  }
  if (entries.empty()) return;
  for (size_t i = 0; i < next; ++i) remembered->checkpoints.push_back(checkpoints[i]);
  remembered->cost = remembered->bytes.capacity() + remembered->ids->capacity() * 4 +
                     remembered->checkpoints.capacity() * sizeof(Checkpoint) +
                     entries.size() * (sizeof(Entry) + 2 * sizeof(uint64_t) + 1);
  for (const auto& [key, entry] : entries) remembered->keys.push_back(key);
  std::shared_ptr<const Text> shared = remembered;

  std::unique_lock lock(mu_);
  for (auto& [key, entry] : entries) {
    entry.text = shared;
    index_.insert_or_assign(key, entry);
  }
  texts_.push_back(shared);
  bytes_ += shared->cost;
  while (bytes_ > options_.max_bytes && texts_.size() > 1) {
    const std::shared_ptr<const Text> oldest = texts_.front();
    texts_.pop_front();
    bytes_ -= oldest->cost;
    for (const uint64_t key : oldest->keys) {
      const auto it = index_.find(key);
      if (it != index_.end() && it->second.text == oldest) index_.erase(it);
    }
  }
}

size_t PrefixCache::MemoryBytes() const {
  std::shared_lock lock(mu_);
  return bytes_ + index_.capacity() * (sizeof(Entry) + sizeof(uint64_t) + 1);
}

size_t PrefixCache::texts() const {
  std::shared_lock lock(mu_);
  return texts_.size();
}

}  // namespace warmroute::tokenize
