// Remembers the ids of texts already encoded, so that a text that starts like one of them (a
// shared system prompt, an earlier turn of the same chat) is encoded from where they part
// instead of from its first byte.
//
// A remembered text keeps its bytes, its ids and its checkpoints: byte offsets where encoding
// may restart (see hf_tokenizer.h for why the ids then equal a full encode's), each with the
// number of ids before it. A checkpoint at `cut` may serve a new text only when the new text
// equals the remembered one on the first cut + `window` bytes (the window covers whatever the
// encoder reads past a cut to decide it: the longest added token, the character after a "\n").
//
// Lookup. Texts are hashed in blocks of kBlockBytes, each block's hash chained to the previous
// one (XXH3, seeded with it); the index maps the chain hash of a text's first k blocks to the
// last checkpoint whose cut + window fits in them. A lookup hashes the new text's blocks, keeps
// the longest indexed prefix, and then compares its bytes with the remembered text, so a hash
// collision can cost a miss but never a wrong id. Cost: one pass of XXH3 (~10 GB/s) and a hash
// probe per 256 bytes.
//
// Bounded: texts are dropped oldest first once their bytes (text, ids and index) exceed
// `max_bytes`; texts shorter than `min_bytes` are not remembered.
//
// Usage:
//   PrefixCache cache({.max_bytes = 64 << 20});
//   if (std::optional<PrefixCache::Hit> hit = cache.Find(text)) { ... resume at hit->cut ... }
//   cache.Remember(text, ids, checkpoints);
//
// Thread-safety: all methods may be called from any thread (a reader-writer lock).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace warmroute::tokenize {

class PrefixCache {
 public:
  static constexpr size_t kBlockBytes = 256;

  struct Options {
    size_t max_bytes = 64 << 20;
    size_t min_bytes = 1024;
    size_t window = 64;  // bytes past a cut that must match too
  };

  struct Checkpoint {
    uint32_t cut;     // byte offset where encoding may restart
    uint32_t ids;     // ids before it
    bool in_segment;  // the cut is inside a piece of text (not right after an added token)
  };

  struct Hit {
    Checkpoint checkpoint;
    std::shared_ptr<const std::vector<int32_t>> ids;  // the first checkpoint.ids are the prefix's
  };

  explicit PrefixCache(Options options) : options_(options) {}
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // The remembered checkpoint that lets `text` skip the most bytes, if any.
  std::optional<Hit> Find(std::string_view text) const;

  // Remembers `text`, its `ids` and its `checkpoints` (in increasing order of cut).
  void Remember(std::string_view text, std::vector<int32_t> ids,
                const std::vector<Checkpoint>& checkpoints);

  size_t MemoryBytes() const;
  size_t texts() const;
  // How many Find calls returned a checkpoint.
  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }

 private:
  struct Text {
    std::string bytes;
    std::shared_ptr<const std::vector<int32_t>> ids;
    std::vector<Checkpoint> checkpoints;
    std::vector<uint64_t> keys;  // its index entries
    size_t cost = 0;
  };
  struct Entry {
    std::shared_ptr<const Text> text;
    uint32_t checkpoint;    // index in text->checkpoints
    uint32_t prefix_bytes;  // the blocks hashed: text->bytes[0, prefix_bytes)
  };

  const Options options_;
  mutable std::shared_mutex mu_;
  absl::flat_hash_map<uint64_t, Entry> index_;     // guarded by mu_
  std::deque<std::shared_ptr<const Text>> texts_;  // guarded by mu_, oldest first
  size_t bytes_ = 0;                               // guarded by mu_
  mutable std::atomic<uint64_t> hits_{0};
};

}  // namespace warmroute::tokenize
