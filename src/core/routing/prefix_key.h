// The gateway's view of a request's prefix: its canonical prompt cut into blocks and hashed as a
// chain, so that two requests share the first k hashes exactly when they share the first k
// blocks of prompt (and model and tenant / cache_salt).
//
// Approximate mode (the default, no tokenizer needed): the canonical prompt text (the rendered
// chat template, or the completion prompt) is cut into blocks of `block_chars` characters
// (default 64, about 16 tokens: one vLLM block; a "character" is a byte of the UTF-8 text, so a
// block may end inside a code point, which hashing does not mind). A request that carries token
// ids is cut into blocks of `block_tokens` tokens instead. Only full blocks are hashed (XXH3-64),
// each chained from its parent: hash[i] = XXH3_64bits_withSeed(block i's bytes, hash[i - 1]).
// The first block's parent is request::RootBlockHash({model, lora = "", cache_salt =
// tenant_or_salt}) (block_hash.h: domain-separated, length-prefixed fields), as the engine keys its
// own first block. Consequence: a token prompt with no tenant and block_tokens equal to the
// engine's block size hashes to exactly the engine's own block hashes (request::HashFullBlocks),
// so KV events can be matched against the index in that case.
//
// The key covers the whole prompt by default (max_chars = max_tokens = 0): what follows a long
// shared part (a user's own context after a 6k-token system prompt, an agent's trajectory) is a
// prefix too, and only a whole-prompt key lets routing see it. The cost is linear in the prompt:
// hashing ~8 ns per 64-byte block, and the index's insert, which refreshes every held block and
// adds the new ones, a few hundred ns per block (docs/performance.md, "Whole-prompt keys"); the
// index bounds itself by the backends' KV capacity (prefix_index.h). An operator may still cap
// the depth: at most `max_chars` characters or `max_tokens` tokens (when > 0) are hashed.
//
// Usage:
//   PrefixKey key = MakePrefixKey(request, /*tenant=*/"acme", PrefixKeyOptions{});
//   key.block_hashes;            // chain of full-block hashes (at most max_chars / block_chars)
//   key.tokens_per_block;        // estimated engine tokens one block stands for
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/request/inference_request.h"

namespace warmroute::routing {

// REQUIRES (validated by whoever parses the config): block_chars > 0, block_tokens > 0,
// chars_per_token > 0. A non-positive block size yields an empty chain rather than a crash.
struct PrefixKeyOptions {
  int block_chars = 64;
  int block_tokens = 16;
  int64_t max_chars = 0;   // 0: the whole prompt; else at most this many characters are hashed
  int64_t max_tokens = 0;  // 0: the whole prompt; else at most this many tokens are hashed
  double chars_per_token = 4.0;  // to estimate prompt tokens from characters
};

struct PrefixKey {
  std::vector<uint64_t> block_hashes;
  double tokens_per_block = 16;  // engine tokens one block stands for (estimate for text)
  int64_t prompt_tokens = 0;     // exact for token prompts, else ceil(chars / chars_per_token)
};

// The key of `request`: its token ids when it has a token prompt, else request::RenderPrompt's
// text (a chat's is hashed piece by piece as the template renders it, without building the text).
// The first block is keyed by request.model and PrefixKeySalt(tenant, request.cache_salt).
PrefixKey MakePrefixKey(const request::InferenceRequest& request, std::string_view tenant,
                        const PrefixKeyOptions& options);

// Same as above for an already rendered prompt text. `tenant_or_salt` is the tenant alone, or
// PrefixKeySalt(tenant, cache_salt) to give the same key as MakePrefixKey.
PrefixKey MakePrefixKeyFromText(std::string_view model, std::string_view tenant_or_salt,
                                std::string_view prompt, const PrefixKeyOptions& options);

// Same as above for a token prompt, cut into blocks of options.block_tokens ids.
PrefixKey MakePrefixKeyFromTokens(std::string_view model, std::string_view tenant_or_salt,
                                  std::span<const int32_t> tokens, const PrefixKeyOptions& options);

// Same as above for tokens that are known.size() blocks whose chain hashes are `known` (as
// MakePrefixKeyFromTokens gives them, with the same model, salt and block_tokens), then `rest`:
// only `rest` is hashed (gateway/keys/block_hash_memo.h keeps such hashes). With `known` empty,
// the key of `rest` alone: the overload above.
PrefixKey MakePrefixKeyFromTokens(std::string_view model, std::string_view tenant_or_salt,
                                  std::span<const uint64_t> known, std::span<const int32_t> rest,
                                  const PrefixKeyOptions& options);

// What keys the first block besides the model: `tenant` when the request has no cache_salt,
// `cache_salt` when there is no tenant, else tenant + '\0' + cache_salt (a tenant never contains
// NUL: it comes from an HTTP header or the config), so requests isolated by either one never
// share a chain.
std::string PrefixKeySalt(std::string_view tenant, std::string_view cache_salt);

}  // namespace warmroute::routing
