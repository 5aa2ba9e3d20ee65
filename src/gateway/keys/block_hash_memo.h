// BlockHashMemo: the chain hashes of the token blocks of texts the tokenizer remembers, so that a
// precise key whose prompt restarted from one of them hashes only its new blocks.
//
// Why. A precise key hashes every block of the prompt's ids (routing::MakePrefixKeyFromTokens):
// about 180 XXH3 calls for a 12 KB chat, though all but its last few blocks are those of a
// system prompt that the previous request hashed too. When the tokenizer's encode restarted from
// a remembered text (tokenize::HfTokenizer::Reuse), the prompt's first `reuse.ids` ids are that
// text's ids, so the hashes of the blocks that lie inside them are the text's own: computed once
// per (text, model, salt, block size) and copied afterwards. The reused ids themselves are read
// where the tokenizer keeps them, never copied.
//
// Exactness. An entry is found by the identity of the remembered ids, not by their content: the
// shared_ptr's owner, which the entry holds weakly so that no other vector can take its place
// while the entry lives, and whose ids are never modified. The model, salt and block size are
// compared in full. So a hit gives exactly the hashes a full MakePrefixKeyFromTokens gives.
//
// Bounded: at most kEntries texts; when full, the oldest entry is dropped. Each entry holds its
// hashes (8 bytes per block) and a weak reference, not the ids.
//
// Usage:
//   tokenize::HfTokenizer::Reuse reuse;
//   std::vector<int32_t> rest = tokenizer.EncodeAfterReuse(text, &reuse);
//   PrefixKey key = memo.MakeKey(model, salt, reuse, rest, options);
//
// Thread-safety: none; request_key.cc keeps one per thread.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/routing/prefix_key.h"
#include "core/tokenize/hf_tokenizer.h"

namespace warmroute::gateway {

class BlockHashMemo {
 public:
  static constexpr size_t kEntries = 256;

  BlockHashMemo() = default;
  BlockHashMemo(const BlockHashMemo&) = delete;
  BlockHashMemo& operator=(const BlockHashMemo&) = delete;

  // routing::MakePrefixKeyFromTokens(model, salt, ids, options) for the ids an encode gave in two
  // parts (tokenize::HfTokenizer::EncodeAfterReuse): (*reuse.remembered)[0, reuse.ids), then
  // `rest`. The hashes of the blocks inside the reused ids come from the memo (computed and
  // remembered when new); only the blocks after them are hashed.
  routing::PrefixKey MakeKey(std::string_view model, std::string_view salt,
                             const tokenize::HfTokenizer::Reuse& reuse,
                             std::span<const int32_t> rest,
                             const routing::PrefixKeyOptions& options);

  size_t size() const { return entries_.size(); }
  // How many MakeKey calls found their text's hashes here, and how many computed them.
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  struct Entry {
    std::weak_ptr<const std::vector<int32_t>> owner;
    std::string model;
    std::string salt;
    int block_tokens = 0;
    std::vector<uint64_t> hashes;  // of every full block of the remembered ids
  };

  // The entry of `reuse`'s text for (model, salt, block_tokens), made when missing.
  const Entry& Find(std::string_view model, std::string_view salt, int block_tokens,
                    const std::shared_ptr<const std::vector<int32_t>>& remembered);

  absl::flat_hash_map<const std::vector<int32_t>*, Entry> entries_;
  std::deque<const std::vector<int32_t>*> order_;  // keys of entries_, oldest first
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
};

}  // namespace warmroute::gateway
