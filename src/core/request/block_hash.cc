#include "core/request/block_hash.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "xxh_x86dispatch.h"  // XXH3_64bits* resolve to the AVX2/AVX-512 variants at run time

namespace warmroute::request {
namespace {

// Distinguishes a root hash's input from any other XXH3 input of ours.
constexpr std::string_view kRootDomain = "warmroute/block-root/v1";

// Writes `field` at `out` as an 8-byte little-endian length followed by its bytes, so that field
// boundaries are unambiguous: ("ab", "c") and ("a", "bc") encode differently. Returns the end.
char* PutField(char* out, std::string_view field) {
  const uint64_t size = field.size();
  for (int i = 0; i < 8; ++i) *out++ = static_cast<char>((size >> (8 * i)) & 0xff);
  if (!field.empty()) std::memcpy(out, field.data(), field.size());
  return out + field.size();
}

}  // namespace

uint64_t RootBlockHash(const BlockHashKey& key) {
  // Encoded on the stack for the usual lengths (one per request, on the gateway's path), with
  // plain stores: growing a vector byte by byte cost more than the hash.
  const size_t size =
      kRootDomain.size() + 3 * 8 + key.model.size() + key.lora.size() + key.cache_salt.size();
  char stack[256];
  std::string heap;
  char* const begin = size <= sizeof(stack) ? stack : (heap.resize(size), heap.data());
  char* out = std::copy(kRootDomain.begin(), kRootDomain.end(), begin);
  out = PutField(out, key.model);
  out = PutField(out, key.lora);
  PutField(out, key.cache_salt);
  return XXH3_64bits(begin, size);
}

uint64_t ChainBlockHash(uint64_t parent, std::span<const int32_t> block_tokens) {
  return XXH3_64bits_withSeed(block_tokens.data(), block_tokens.size_bytes(), parent);
}

std::vector<uint64_t> HashFullBlocks(std::span<const int32_t> tokens, int block_size,
                                     uint64_t root) {
  if (block_size <= 0) {
    std::fprintf(stderr, "HashFullBlocks: block_size must be positive, got %d\n", block_size);
    std::abort();
  }
  const size_t size = static_cast<size_t>(block_size);
  const size_t num_blocks = tokens.size() / size;
  std::vector<uint64_t> hashes;
  hashes.reserve(num_blocks);
  uint64_t parent = root;
  for (size_t i = 0; i < num_blocks; ++i) {
    parent = ChainBlockHash(parent, tokens.subspan(i * size, size));
    hashes.push_back(parent);
  }
  return hashes;
}

}  // namespace warmroute::request
