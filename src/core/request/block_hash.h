// vLLM's prefix-cache block hashing: a prompt is cut into blocks of block_size tokens; only full
// blocks are hashed; each block's hash chains from its parent's, and the first block's parent is
// a root hash keyed by model, LoRA name and cache_salt, so requests that differ in any of these
// never share a block. XXH3-64 throughout.
//
// Usage:
//   uint64_t root = RootBlockHash({.model = "m", .lora = "", .cache_salt = salt});
//   std::vector<uint64_t> hashes = HashFullBlocks(tokens, 16, root);
//   // hashes.size() == tokens.size() / 16; hashes[i] covers tokens [0, 16 * (i + 1)).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace warmroute::request {

struct BlockHashKey {
  std::string_view model;
  std::string_view lora;
  std::string_view cache_salt;
};

// The parent hash of a chain's first block.
uint64_t RootBlockHash(const BlockHashKey& key);

// The hash of one block whose parent block has hash `parent` (RootBlockHash for the first).
uint64_t ChainBlockHash(uint64_t parent, std::span<const int32_t> block_tokens);

// Hashes of every full block of `tokens`. REQUIRES: block_size > 0.
std::vector<uint64_t> HashFullBlocks(std::span<const int32_t> tokens, int block_size,
                                     uint64_t root);

}  // namespace warmroute::request
