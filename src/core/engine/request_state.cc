#include "core/engine/request_state.h"

#include "core/request/block_hash.h"

namespace warmroute::engine {

std::span<const uint64_t> RequestState::BlockHashes(int64_t num_blocks, int block_size) {
  const std::span<const int32_t> all(tokens);
  while (static_cast<int64_t>(block_hashes_.size()) < num_blocks) {
    const size_t i = block_hashes_.size();
    const uint64_t parent = i == 0 ? root_hash : block_hashes_.back();
    block_hashes_.push_back(request::ChainBlockHash(
        parent, all.subspan(i * static_cast<size_t>(block_size), static_cast<size_t>(block_size))));
  }
  return std::span<const uint64_t>(block_hashes_).first(static_cast<size_t>(num_blocks));
}

}  // namespace warmroute::engine
