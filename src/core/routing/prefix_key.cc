#include "core/routing/prefix_key.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "core/request/block_hash.h"
#include "core/request/chat_template.h"
// The plain (SSE2) XXH3: blocks are 64 bytes, below the 240-byte size where XXH3 switches to its
// SIMD loop, so xxh_x86dispatch.h's run-time dispatch only adds an indirect call (measured on
// this machine: 7.8 ns per 64-byte block plain, 8.3 ns dispatched).
#include "xxhash.h"

namespace warmroute::routing {
namespace {

uint64_t RootHash(std::string_view model, std::string_view tenant_or_salt) {
  return request::RootBlockHash({.model = model, .lora = "", .cache_salt = tenant_or_salt});
}

// Hashes a text that comes in pieces as a chain of full blocks of `block_bytes` bytes, at most
// `max_blocks` of them: hash[i] = XXH3_64bits_withSeed(block i, hash[i - 1]), hash[-1] = root,
// over the pieces' concatenation, without building it (a chat prompt is rendered only to be
// hashed: that was a copy and an allocation of the whole prompt per request). A block within one
// piece is hashed where it lies; one that spans pieces is gathered first.
class ChainHasher {
 public:
  ChainHasher(size_t block_bytes, size_t max_blocks, uint64_t root, size_t expected_bytes)
      : block_(block_bytes), max_blocks_(max_blocks), parent_(root) {
    if (block_ > sizeof(stack_)) {
      heap_.resize(block_);
      stage_ = heap_.data();
    }
    hashes_.reserve(std::min(expected_bytes / block_, max_blocks_));
  }

  void Add(std::string_view piece) {
    while (!piece.empty() && hashes_.size() < max_blocks_) {
      if (staged_ == 0 && piece.size() >= block_) {
        Hash(piece.data());
        piece.remove_prefix(block_);
        continue;
      }
      const size_t take = std::min(block_ - staged_, piece.size());
      std::memcpy(stage_ + staged_, piece.data(), take);
      staged_ += take;
      piece.remove_prefix(take);
      if (staged_ == block_) {
        Hash(stage_);
        staged_ = 0;
      }
    }
  }

  std::vector<uint64_t> Take() { return std::move(hashes_); }

 private:
  void Hash(const char* block) {
    parent_ = XXH3_64bits_withSeed(block, block_, parent_);
    hashes_.push_back(parent_);
  }

  const size_t block_;
  const size_t max_blocks_;
  uint64_t parent_;
  std::vector<uint64_t> hashes_;
  char stack_[256];
  std::string heap_;  // the staging buffer of blocks over 256 bytes
  char* stage_ = stack_;
  size_t staged_ = 0;  // bytes of the current block gathered in stage_
};

// Hashes min(size / block, max_blocks) full blocks of `data` (block bytes each) as a chain.
std::vector<uint64_t> HashChain(const char* data, size_t size, size_t block_bytes,
                                size_t max_blocks, uint64_t parent) {
  ChainHasher hasher(block_bytes, max_blocks, parent, size);
  hasher.Add(std::string_view(data, size));
  return hasher.Take();
}

// The most blocks a key holds: max_units / block_units, or unbounded for max_units <= 0 (the
// whole prompt, PrefixKeyOptions' default).
size_t MaxBlocks(int64_t max_units, int block_units) {
  return max_units <= 0 ? std::numeric_limits<size_t>::max()
                        : static_cast<size_t>(max_units / block_units);
}

// The key of a text of `chars` bytes that feed(ChainHasher&) hands to the hasher, in pieces.
template <typename Feed>
PrefixKey KeyOfText(std::string_view model, std::string_view tenant_or_salt, size_t chars,
                    const PrefixKeyOptions& options, Feed feed) {
  PrefixKey key;
  const double chars_per_token = options.chars_per_token > 0 ? options.chars_per_token : 4.0;
  key.prompt_tokens = static_cast<int64_t>(std::ceil(static_cast<double>(chars) / chars_per_token));
  if (options.block_chars <= 0) return key;
  key.tokens_per_block = options.block_chars / chars_per_token;
  ChainHasher hasher(static_cast<size_t>(options.block_chars),
                     MaxBlocks(options.max_chars, options.block_chars),
                     RootHash(model, tenant_or_salt), chars);
  feed(hasher);
  key.block_hashes = hasher.Take();
  return key;
}

}  // namespace

std::string PrefixKeySalt(std::string_view tenant, std::string_view cache_salt) {
  if (cache_salt.empty()) return std::string(tenant);
  if (tenant.empty()) return std::string(cache_salt);
  std::string salt;
  salt.reserve(tenant.size() + 1 + cache_salt.size());
  salt.append(tenant);
  salt.push_back('\0');
  salt.append(cache_salt);
  return salt;
}

PrefixKey MakePrefixKeyFromText(std::string_view model, std::string_view tenant_or_salt,
                                std::string_view prompt, const PrefixKeyOptions& options) {
  return KeyOfText(model, tenant_or_salt, prompt.size(), options,
                   [prompt](ChainHasher& hasher) { hasher.Add(prompt); });
}

PrefixKey MakePrefixKeyFromTokens(std::string_view model, std::string_view tenant_or_salt,
                                  std::span<const int32_t> tokens,
                                  const PrefixKeyOptions& options) {
  return MakePrefixKeyFromTokens(model, tenant_or_salt, {}, tokens, options);
}

PrefixKey MakePrefixKeyFromTokens(std::string_view model, std::string_view tenant_or_salt,
                                  std::span<const uint64_t> known, std::span<const int32_t> rest,
                                  const PrefixKeyOptions& options) {
  PrefixKey key;
  if (options.block_tokens <= 0) {
    key.prompt_tokens = static_cast<int64_t>(rest.size());
    return key;
  }
  const auto block = static_cast<size_t>(options.block_tokens);
  key.prompt_tokens = static_cast<int64_t>(known.size() * block + rest.size());
  key.tokens_per_block = options.block_tokens;
  const size_t max_blocks = MaxBlocks(options.max_tokens, options.block_tokens);
  const size_t taken = std::min(known.size(), max_blocks);
  if (taken < known.size()) {
    key.block_hashes.assign(known.begin(), known.begin() + static_cast<ptrdiff_t>(taken));
    return key;
  }
  std::vector<uint64_t> after = HashChain(
      reinterpret_cast<const char*>(rest.data()), rest.size_bytes(), sizeof(int32_t) * block,
      max_blocks - taken, taken > 0 ? known[taken - 1] : RootHash(model, tenant_or_salt));
  if (taken == 0) {
    key.block_hashes = std::move(after);
    return key;
  }
  key.block_hashes.reserve(taken + after.size());
  key.block_hashes.assign(known.begin(), known.begin() + static_cast<ptrdiff_t>(taken));
  key.block_hashes.insert(key.block_hashes.end(), after.begin(), after.end());
  return key;
}

PrefixKey MakePrefixKey(const request::InferenceRequest& request, std::string_view tenant,
                        const PrefixKeyOptions& options) {
  const std::string salt = PrefixKeySalt(tenant, request.cache_salt);
  if (request.has_token_prompt) {
    return MakePrefixKeyFromTokens(request.model, salt, request.prompt_token_ids, options);
  }
  if (request.endpoint == request::Endpoint::kCompletions) {
    return MakePrefixKeyFromText(request.model, salt, request.prompt, options);
  }
  // The chat template's text (request::RenderPrompt's, with the tools of a Responses or
  // Messages request), hashed as it comes.
  size_t chars = 0;
  request::ForEachChatPiece(request.messages, request.tools, /*add_generation_prompt=*/true,
                            [&chars](std::string_view piece) { chars += piece.size(); });
  return KeyOfText(request.model, salt, chars, options, [&request](ChainHasher& hasher) {
    request::ForEachChatPiece(request.messages, request.tools, /*add_generation_prompt=*/true,
                              [&hasher](std::string_view piece) { hasher.Add(piece); });
  });
}

}  // namespace warmroute::routing
