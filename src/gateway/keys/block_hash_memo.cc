#include "gateway/keys/block_hash_memo.h"

#include <algorithm>
#include <utility>

namespace warmroute::gateway {
namespace {

// Whether `a` and `b` share their owner (the same control block, so the same vector).
bool SameOwner(const std::weak_ptr<const std::vector<int32_t>>& a,
               const std::shared_ptr<const std::vector<int32_t>>& b) {
  return !a.owner_before(b) && !b.owner_before(a);
}

}  // namespace

const BlockHashMemo::Entry& BlockHashMemo::Find(
    std::string_view model, std::string_view salt, int block_tokens,
    const std::shared_ptr<const std::vector<int32_t>>& remembered) {
  const auto it = entries_.find(remembered.get());
  if (it != entries_.end() && SameOwner(it->second.owner, remembered) &&
      it->second.block_tokens == block_tokens && it->second.model == model &&
      it->second.salt == salt) {
    ++hits_;
    return it->second;
  }
  ++misses_;
  routing::PrefixKeyOptions all;
  all.block_tokens = block_tokens;
  all.max_tokens = 0;  // every full block
  Entry entry{
      .owner = remembered,
      .model = std::string(model),
      .salt = std::string(salt),
      .block_tokens = block_tokens,
      .hashes = routing::MakePrefixKeyFromTokens(model, salt, *remembered, all).block_hashes};
  if (it != entries_.end()) {
    // Another model, salt or block size for the same text, or a vector that took the place of
    // one no longer held: replaced (it keeps its place in the order).
    it->second = std::move(entry);
    return it->second;
  }
  if (entries_.size() >= kEntries) {
    entries_.erase(order_.front());
    order_.pop_front();
  }
  order_.push_back(remembered.get());
  return entries_.emplace(remembered.get(), std::move(entry)).first->second;
}

routing::PrefixKey BlockHashMemo::MakeKey(std::string_view model, std::string_view salt,
                                          const tokenize::HfTokenizer::Reuse& reuse,
                                          std::span<const int32_t> rest,
                                          const routing::PrefixKeyOptions& options) {
  const std::span<const int32_t> reused =
      reuse.remembered != nullptr ? std::span<const int32_t>(*reuse.remembered)
                                        .first(std::min(reuse.ids, reuse.remembered->size()))
                                  : std::span<const int32_t>();
  const size_t blocks =
      options.block_tokens > 0 ? reused.size() / static_cast<size_t>(options.block_tokens) : 0;
  // What is hashed: the reused ids past the last full block inside them, then `rest`.
  const size_t from = blocks * static_cast<size_t>(std::max(options.block_tokens, 0));
  std::vector<int32_t> after;
  after.reserve(reused.size() - from + rest.size());
  after.assign(reused.begin() + static_cast<ptrdiff_t>(from), reused.end());
  after.insert(after.end(), rest.begin(), rest.end());
  if (blocks == 0) return routing::MakePrefixKeyFromTokens(model, salt, after, options);
  const Entry& entry = Find(model, salt, options.block_tokens, reuse.remembered);
  return routing::MakePrefixKeyFromTokens(
      model, salt, std::span<const uint64_t>(entry.hashes).first(blocks), after, options);
}

}  // namespace warmroute::gateway
