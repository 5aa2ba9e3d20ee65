#include "core/kv_events/block_index_writer.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/request/block_hash.h"
#include "core/routing/prefix_key.h"

namespace warmroute::kv_events {
namespace {

// Map lookups of a run are prefetched this many blocks ahead: in a slice of 512K blocks every
// lookup is a cache miss, and a KV event lists its blocks at once.
constexpr size_t kMapPrefetchDistance = 16;

uint8_t TierBit(Medium medium) {
  switch (medium) {
    case Medium::kUnspecified:
    case Medium::kGpu:
      return 1;
    case Medium::kCpu:
      return 2;
    case Medium::kDisk:
      return 4;
    case Medium::kOther:
      return 8;
  }
  return 8;
}

// Whether candidate `r` is consistent with the salt evidence of first-block event `e`.
bool SaltConsistent(const routing::DomainRecord& r, const EventBatch& batch, const Event& e) {
  if (e.cache_salt.has_value()) return r.salt_fp == routing::SaltFingerprint(*e.cache_salt);
  switch (e.extra_keys) {
    case Event::ExtraKeys::kAbsent:
      return true;
    case Event::ExtraKeys::kFirstNil:
      return r.salt_fp == 0;
    case Event::ExtraKeys::kFirstTuple: {
      bool salted = false;
      for (std::string_view s : batch.strings(e)) {
        if (e.lora_name.has_value() && s == *e.lora_name) continue;
        salted = true;
        if (r.salt_fp != 0 && r.salt_fp == routing::SaltFingerprint(s)) return true;
      }
      return !salted && r.salt_fp == 0;
    }
  }
  return false;
}

// Whether the event says how the engine salted the first block (SaltConsistent then decides
// from the event, not from the absence of other candidates).
bool HasSaltEvidence(const Event& e) {
  return e.cache_salt.has_value() || e.extra_keys != Event::ExtraKeys::kAbsent;
}

}  // namespace

BlockIndexWriter::BlockIndexWriter(BlockIndexWriterOptions options) : options_(options) {
  options_.block_size = std::max(1, options_.block_size);
  options_.max_domains_per_block = std::max<size_t>(1, options_.max_domains_per_block);
}

BlockIndexWriter::Backend& BlockIndexWriter::StateOf(routing::BackendId backend) {
  if (backend >= backends_.size()) backends_.resize(size_t{backend} + 1);
  return backends_[backend];
}

absl::Status BlockIndexWriter::Apply(routing::BackendId backend, const EventBatch& batch,
                                     const routing::DomainAttribution& attribution,
                                     routing::IndexUpdates& out) {
  Backend& state = StateOf(backend);
  for (const Event& e : batch.events) {
    // The first lookup of each event (its parent, or its first block) is fetched now, so that
    // the events' lookups overlap.
    if (e.kind == EventKind::kBlockStored && e.has_parent) {
      state.Prefetch(e.parent_hash);
    } else if (e.kind != EventKind::kAllBlocksCleared && !batch.hashes(e).empty()) {
      state.Prefetch(batch.hashes(e)[0]);
    }
    if (e.kind == EventKind::kBlockStored && e.block_size != options_.block_size) {
      ++counters_.block_size_mismatches;
      return absl::FailedPreconditionError(
          absl::StrCat("KV event of backend ", backend, " has block_size ", e.block_size,
                       ", but the configured block size is ", options_.block_size,
                       " (the engine's --block-size must equal the routing key's block_tokens)"));
    }
  }
  for (const Event& e : batch.events) {
    switch (e.kind) {
      case EventKind::kBlockStored:
        Stored(backend, state, batch, e, attribution, out);
        break;
      case EventKind::kBlockRemoved:
        Removed(state, batch, e, out);
        break;
      case EventKind::kAllBlocksCleared:
        state = Backend{};
        out.ClearAll();
        ++counters_.cleared;
        break;
    }
  }
  return absl::OkStatus();
}

BlockIndexWriter::Roots BlockIndexWriter::Attribute(routing::BackendId backend,
                                                    const EventBatch& batch, const Event& e,
                                                    const routing::DomainAttribution& attribution,
                                                    size_t blocks) {
  const uint64_t content = routing::FirstBlockContentHash(
      batch.tokens(e).first(static_cast<size_t>(options_.block_size)));
  const uint64_t lora_fp =
      e.lora_name.has_value() ? routing::ModelFingerprint(*e.lora_name) : uint64_t{0};
  Roots roots;
  bool salted = false;
  bool one_model = true;
  uint64_t model_fp = 0;
  auto consider = [&](std::span<const routing::DomainRecord> candidates) {
    for (const routing::DomainRecord& r : candidates) {
      if (e.lora_name.has_value() && r.model_fp != lora_fp) continue;
      if (!SaltConsistent(r, batch, e)) continue;
      if (roots.empty()) model_fp = r.model_fp;
      one_model = one_model && r.model_fp == model_fp;
      salted = salted || r.salt_fp != 0;
      roots.push_back(r.root);  // candidates are distinct by root
    }
  };
  consider(attribution.Candidates(backend, content));
  // Nobody sent it there through this router: another gateway replica did. With the engine's
  // salt evidence, the domains in which this router sent the same first block anywhere are as
  // safe to use as its own records (SaltConsistent keeps a salted block to its salt's domain).
  // Failing those, an unsalted block (by the evidence) is one every unsalted domain of its model
  // would hit on the engine: the unsalted domains this router routes for.
  if (roots.empty() && HasSaltEvidence(e)) {
    consider(attribution.FleetCandidates(content));
    if (roots.empty()) consider(attribution.UnsaltedDomains());
    if (!roots.empty()) counters_.fleet_attributed_blocks += static_cast<int64_t>(blocks);
  }
  if (roots.empty()) {
    counters_.unattributed_blocks += static_cast<int64_t>(blocks);
  } else if (roots.size() > 1 &&
             (salted || !one_model || roots.size() > options_.max_domains_per_block)) {
    counters_.ambiguous_blocks += static_cast<int64_t>(blocks);
    roots.clear();
  }
  return roots;
}

void BlockIndexWriter::Stored(routing::BackendId backend, Backend& state, const EventBatch& batch,
                              const Event& e, const routing::DomainAttribution& attribution,
                              routing::IndexUpdates& out) {
  const std::span<const uint64_t> hashes = batch.hashes(e);
  const std::span<const int32_t> tokens = batch.tokens(e);
  const size_t n = hashes.size();
  if (n == 0) return;
  const uint8_t bit = TierBit(e.medium);
  // The blocks' map slots arrive while the run's keys are hashed.
  for (size_t j = 0; j < std::min(n, kMapPrefetchDistance); ++j) state.Prefetch(hashes[j]);
  // Per domain, the key the run continues from: the parent's key(s), or for a first block its
  // domains' roots. A first block already in the map (stored again, or on another tier) keeps
  // the domains it was attributed to: the run continues from its keys.
  Roots parents;
  size_t first = 0;
  bool with_parent = e.has_parent;
  auto keys_of = [&state](const Node& node, Roots& keys) {
    keys.push_back(node.ours);
    if (node.more) {
      const auto& more = state.more.at(node.engine_hash);
      keys.insert(keys.end(), more.begin(), more.end());
    }
  };
  if (e.has_parent) {
    const size_t p = state.Find(e.parent_hash);
    if (p == routing::kNoSlot) {
      counters_.orphan_blocks += static_cast<int64_t>(n);
      return;
    }
    keys_of(state.blocks[p], parents);
  } else if (const size_t f = state.Find(hashes[0]); f != routing::kNoSlot) {
    Node& node = state.blocks[f];
    if ((node.tiers & bit) == 0) ++counters_.tier_changes;
    node.tiers |= bit;
    keys_of(node, parents);
    first = 1;
    with_parent = true;
  } else {
    parents = Attribute(backend, batch, e, attribution, n);
    if (parents.empty()) return;
  }
  const size_t count = n - first;  // blocks whose keys are computed here
  if (state.blocks.used() + count > options_.max_blocks_per_backend) {
    counters_.over_capacity += static_cast<int64_t>(count);
    return;
  }
  // Keys per domain, each run after the key it continues: scratch_[d * stride] that key,
  // scratch_[d * stride + 1 + j] block first + j. A run with a parent is inserted with it
  // (touching the parent keeps the slice's LRU order prefix-closed, as PrefixIndex::Insert of a
  // whole chain does).
  const size_t stride = count + 1;
  const size_t domains = parents.size();
  scratch_.resize(domains * stride);
  const auto block = static_cast<size_t>(options_.block_size);
  for (size_t d = 0; d < domains; ++d) {
    uint64_t* run = scratch_.data() + d * stride;
    run[0] = parents[d];
    for (size_t j = 0; j < count; ++j) {
      run[j + 1] = request::ChainBlockHash(run[j], tokens.subspan((first + j) * block, block));
    }
    out.Insert(std::span<const uint64_t>(run + (with_parent ? 0 : 1), with_parent ? stride : count));
  }
  for (size_t j = 0; j < count; ++j) {
    if (j + kMapPrefetchDistance < n) state.Prefetch(hashes[j + kMapPrefetchDistance]);
    const uint64_t hash = hashes[first + j];
    if (const size_t s = state.Find(hash); s != routing::kNoSlot) {
      // Known block: another tier now holds it too (or the engine stored it again).
      Node& node = state.blocks[s];
      if ((node.tiers & bit) == 0) ++counters_.tier_changes;
      node.tiers |= bit;
      continue;
    }
    state.blocks.Add(
        {.engine_hash = hash, .ours = scratch_[1 + j], .tiers = bit, .more = domains > 1});
    if (domains > 1) {
      auto& more = state.more[hash];
      more.clear();
      for (size_t d = 1; d < domains; ++d) more.push_back(scratch_[d * stride + 1 + j]);
    }
    ++counters_.stored_blocks;
  }
}

void BlockIndexWriter::Removed(Backend& state, const EventBatch& batch, const Event& e,
                               routing::IndexUpdates& out) {
  const uint8_t bit = TierBit(e.medium);
  bool begun = false;
  const std::span<const uint64_t> hashes = batch.hashes(e);
  const size_t n = hashes.size();
  for (size_t j = 0; j < std::min(n, kMapPrefetchDistance); ++j) state.Prefetch(hashes[j]);
  for (size_t k = 0; k < n; ++k) {
    if (k + kMapPrefetchDistance < n) state.Prefetch(hashes[k + kMapPrefetchDistance]);
    const uint64_t hash = hashes[k];
    const size_t s = state.Find(hash);
    if (s == routing::kNoSlot) {
      ++counters_.unknown_removals;
      continue;
    }
    Node& node = state.blocks[s];
    node.tiers &= static_cast<uint8_t>(~bit);
    if (node.tiers != 0) {
      ++counters_.tier_changes;
      continue;
    }
    if (!begun) {
      out.Begin(routing::IndexUpdates::Kind::kRemove);
      begun = true;
    }
    out.Append(node.ours);
    if (node.more) {
      auto more = state.more.find(hash);
      for (uint64_t key : more->second) out.Append(key);
      state.more.erase(more);
    }
    state.blocks.Erase(s);
    ++counters_.removed_blocks;
  }
}

void BlockIndexWriter::Clear(routing::BackendId backend, routing::IndexUpdates& out) {
  StateOf(backend) = Backend{};
  out.ClearAll();
  ++counters_.cleared;
}

void BlockIndexWriter::RemoveBackend(routing::BackendId backend) {
  if (backend < backends_.size()) backends_[backend] = Backend{};
}

size_t BlockIndexWriter::blocks(routing::BackendId backend) const {
  return backend < backends_.size() ? backends_[backend].blocks.used() : 0;
}

size_t BlockIndexWriter::MemoryBytes() const {
  size_t bytes = sizeof(*this) + backends_.capacity() * sizeof(Backend) +
                 scratch_.capacity() * sizeof(uint64_t);
  for (const Backend& b : backends_) {
    bytes += b.blocks.allocated_bytes();
    // flat_hash_map: one slot and one control byte per bucket.
    bytes += b.more.capacity() *
             (sizeof(std::pair<const uint64_t, absl::InlinedVector<uint64_t, 3>>) + 1);
  }
  return bytes;
}

}  // namespace warmroute::kv_events
