#include "core/tokenize/prefix_cache.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "xxhash.h"

namespace warmroute::tokenize {
namespace {

// The hash of a block chained to the previous one. XXH3 with a seed derives a custom secret for
// inputs over 240 bytes (about half the cost of hashing a 256-byte block), so the block is hashed
// unseeded and the two hashes are then hashed together.
uint64_t ChainHash(uint64_t previous, std::string_view block) {
  const uint64_t pair[2] = {previous, XXH3_64bits(block.data(), block.size())};
  return XXH3_64bits(pair, sizeof(pair));
}

// How many bytes `a` and `b` share from their start, given that they share `from`: memcmp over
// 1024-byte then 64-byte chunks, then bytes.
size_t CommonPrefix(std::string_view a, std::string_view b, size_t from) {
  const size_t limit = std::min(a.size(), b.size());
  size_t n = from;
  while (n + 1024 <= limit && std::memcmp(a.data() + n, b.data() + n, 1024) == 0) n += 1024;
  while (n + 64 <= limit && std::memcmp(a.data() + n, b.data() + n, 64) == 0) n += 64;
  while (n < limit && a[n] == b[n]) ++n;
  return n;
}

}  // namespace

std::optional<PrefixCache::Hit> PrefixCache::Find(std::string_view text) const {
  const size_t blocks = text.size() / kBlockBytes;
  if (blocks == 0) return std::nullopt;
  std::shared_lock lock(mu_);
  if (index_.empty()) return std::nullopt;
  // The best text so far and how many bytes it shares with `text`.
  const Text* best = nullptr;
  size_t common = 0;
  uint64_t hash = 0;
  size_t k = 0;  // blocks chained into `hash`
  while (k < blocks) {
    hash = ChainHash(hash, text.substr(k * kBlockBytes, kBlockBytes));
    ++k;
    const auto it = index_.find(hash);
    if (it == index_.end()) {
      // No remembered text has these first k blocks; then none has more (see the header).
      if (best != nullptr) break;
      continue;
    }
    const Text& candidate = *it->second.text;
    if (&candidate == best) continue;  // a collision: best parts from `text` before this block
    if (std::memcmp(candidate.bytes.data(), text.data(), it->second.prefix_bytes) != 0) continue;
    const size_t shared = CommonPrefix(candidate.bytes, text, it->second.prefix_bytes);
    if (shared > common) {
      best = &candidate;
      common = shared;
    }
    // The blocks that end inside the shared part are best's own: their chain hashes are best's.
    // A text that shares more with `text` than best does either shares the block best parts in,
    // which the probes from there on find, or parts inside that block too (less than a block more).
    const size_t inside = common / kBlockBytes;
    if (inside > k) {
      hash = best->chain[inside - 1];
      k = inside;
    }
  }
  if (best == nullptr) return std::nullopt;
  // The last checkpoint that fits.
  const std::vector<Checkpoint>& checkpoints = best->checkpoints;
  auto it = std::upper_bound(checkpoints.begin(), checkpoints.end(), common,
                             [](size_t n, const Checkpoint& c) { return n < c.cut; });
  while (it != checkpoints.begin()) {
    --it;
    if (it->cut + it->window <= common) {
      hits_.fetch_add(1, std::memory_order_relaxed);
      return Hit{*it, best->ids};
    }
  }
  return std::nullopt;
}

void PrefixCache::Remember(std::string_view text, std::span<const int32_t> ids,
                           const std::vector<Checkpoint>& checkpoints,
                           const std::function<size_t(size_t cut)>& window_at) {
  if (text.size() < options_.min_bytes || checkpoints.empty()) return;
  auto remembered = std::make_shared<Text>();
  remembered->bytes = std::string(text);
  remembered->ids = std::make_shared<const std::vector<int32_t>>(ids.begin(), ids.end());
  remembered->checkpoints = checkpoints;
  for (Checkpoint& c : remembered->checkpoints) c.window = static_cast<uint32_t>(window_at(c.cut));
  // Index every block that ends past the first checkpoint's window: a lookup that matches one
  // finds this text.
  const Checkpoint& first = remembered->checkpoints.front();
  std::vector<uint64_t>& keys = remembered->keys;
  std::vector<uint32_t> ends;
  uint64_t hash = 0;
  for (size_t end = kBlockBytes; end <= text.size(); end += kBlockBytes) {
    hash = ChainHash(hash, text.substr(end - kBlockBytes, kBlockBytes));
    remembered->chain.push_back(hash);
    if (first.cut + first.window > end) continue;
    keys.push_back(hash);
    ends.push_back(static_cast<uint32_t>(end));
  }
  if (keys.empty()) return;
  remembered->cost = remembered->bytes.capacity() + remembered->ids->capacity() * 4 +
                     remembered->checkpoints.capacity() * sizeof(Checkpoint) +
                     remembered->chain.capacity() * sizeof(uint64_t) +
                     keys.size() * (sizeof(Entry) + 2 * sizeof(uint64_t) + 1);
  std::shared_ptr<const Text> shared = remembered;

  std::unique_lock lock(mu_);
  for (size_t k = 0; k < keys.size(); ++k) index_.insert_or_assign(keys[k], Entry{shared, ends[k]});
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
