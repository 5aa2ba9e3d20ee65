// Remembers the ids of texts already encoded, so that a text that starts like one of them (a
// shared system prompt, an earlier turn of the same chat) is encoded from where they part
// instead of from its first byte.
//
// A remembered text keeps its bytes, its ids and its checkpoints: byte offsets where encoding
// may restart (see hf_tokenizer.h for why the ids then equal a full encode's), each with the
// number of ids before it and its window. A checkpoint at `cut` may serve a new text only when
// the new text equals the remembered one on the first cut + window bytes (the window covers
// what the encoder reads past a cut to decide it: the character after it, an added token that
// could reach past it).
//
// Lookup. Texts are hashed in blocks of kBlockBytes, each block's hash chained to the previous
// one (XXH3 of the block, hashed with the previous chain hash); the index maps the chain hash of
// a text's first k blocks to the remembered text (the newest with those blocks). A lookup hashes
// the new text's blocks until one is indexed, compares bytes with that remembered text, from the
// start and on past the block to where the two texts part, and goes on from the first block past
// that point (the chain hashes of the blocks before it are the remembered text's own, kept with
// it, so they are not hashed again): a text indexed there shares more with the new one and
// becomes the candidate, and the first block no text indexes ends the search. It then takes the
// candidate's last checkpoint whose cut + window lies before where the two texts part. So a hash
// collision can cost a miss but never a wrong id, and a text that parts from a remembered one in
// the middle of a block still restarts from the checkpoint just before. A remembered text indexes
// each of its blocks from its first checkpoint on, so a block no text indexes past one that is
// indexed means no text shares it (but after evictions, where a text's first blocks were indexed
// by an older one now dropped: then the lookup restarts from a shorter prefix, or encodes from
// the start).
// Cost, for a prompt that begins with a remembered system prompt: the hash of its first block or
// few, a probe or two, a memcmp up to where the texts part, and the hash of the block past it.
//
// Bounded: texts are dropped oldest first once their bytes (text, ids and index) exceed
// `max_bytes`; texts shorter than `min_bytes` are not remembered.
//
// Usage:
//   PrefixCache cache({.max_bytes = 64 << 20});
//   if (std::optional<PrefixCache::Hit> hit = cache.Find(text)) { ... resume at hit->cut ... }
//   cache.Remember(text, ids, checkpoints, window_at);
//
// Thread-safety: all methods may be called from any thread (a reader-writer lock).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <span>
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
  };

  struct Checkpoint {
    uint32_t cut;         // byte offset where encoding may restart
    uint32_t ids;         // ids before it
    bool in_segment;      // the cut is inside a piece of text (not right after an added token)
    uint32_t window = 0;  // bytes past the cut that must match too (set by Remember)
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

  // Remembers `text`, its `ids` and its `checkpoints` (in increasing order of cut), each with
  // the window `window_at(cut)`.
  void Remember(std::string_view text, std::span<const int32_t> ids,
                const std::vector<Checkpoint>& checkpoints,
                const std::function<size_t(size_t cut)>& window_at);

  size_t MemoryBytes() const;
  size_t texts() const;
  // How many Find calls returned a checkpoint.
  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }

 private:
  struct Text {
    std::string bytes;
    std::shared_ptr<const std::vector<int32_t>> ids;
    std::vector<Checkpoint> checkpoints;
    std::vector<uint64_t> chain;  // the chain hash of each of its blocks
    std::vector<uint64_t> keys;   // its index entries
    size_t cost = 0;
  };
  struct Entry {
    std::shared_ptr<const Text> text;
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
