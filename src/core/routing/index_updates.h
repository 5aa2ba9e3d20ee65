// A list of changes to one backend's slice of the prefix index, made by a producer that does not
// own the index (kv_events::BlockIndexWriter, from an engine's KV events) and applied by its
// owner (Router::ApplyIndexUpdates, or a benchmark's PrefixIndex) in order.
//
//   kInsert  PrefixIndex::Insert(backend, hashes): a run of a chain, parent first; marks every
//            block held and most recently used.
//   kRemove  PrefixIndex::Remove(backend, hashes).
//   kClear   PrefixIndex::Clear(backend).
//
// Reused across batches: clear() keeps the capacity, so steady-state producing allocates nothing.
//
// Thread-safety: a plain value.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/routing/prefix_index.h"

namespace warmroute::routing {

class IndexUpdates {
 public:
  enum class Kind : uint8_t { kInsert, kRemove, kClear };
  struct Op {
    Kind kind;
    uint32_t begin;  // range of hashes()
    uint32_t count;
  };

  void Insert(std::span<const uint64_t> chain) { Add(Kind::kInsert, chain); }
  void Remove(std::span<const uint64_t> hashes) { Add(Kind::kRemove, hashes); }
  void ClearAll() { ops_.push_back({.kind = Kind::kClear, .begin = 0, .count = 0}); }
  // Begin starts an insert or remove op and Append adds a hash to the op begun last: a run built
  // in place. REQUIRES (Append): the last op is an insert or remove.
  void Begin(Kind kind) {
    ops_.push_back({.kind = kind, .begin = static_cast<uint32_t>(hashes_.size()), .count = 0});
  }
  void Append(uint64_t hash) {
    hashes_.push_back(hash);
    ++ops_.back().count;
  }

  std::span<const Op> ops() const { return ops_; }
  std::span<const uint64_t> hashes(const Op& op) const {
    return std::span<const uint64_t>(hashes_).subspan(op.begin, op.count);
  }
  bool empty() const { return ops_.empty(); }
  void clear() {
    ops_.clear();
    hashes_.clear();
  }

  // Applies every op to `backend`'s slice of `index`, in order.
  void ApplyTo(PrefixIndex& index, BackendId backend) const;

 private:
  void Add(Kind kind, std::span<const uint64_t> hashes) {
    Begin(kind);
    hashes_.insert(hashes_.end(), hashes.begin(), hashes.end());
    ops_.back().count = static_cast<uint32_t>(hashes.size());
  }

  std::vector<Op> ops_;
  std::vector<uint64_t> hashes_;
};

}  // namespace warmroute::routing
