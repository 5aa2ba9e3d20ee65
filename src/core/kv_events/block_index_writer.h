// Turns a backend's decoded KV events into changes of the router's prefix index
// (routing::IndexUpdates), keyed by warmroute's own block hashes.
//
// Keys. The index is never keyed by the engine's hash (its algorithm and seed need not match
// ours): a stored block's key is request::ChainBlockHash(parent's key, its token ids), the
// chain's root being its domain's request::RootBlockHash({model, "", PrefixKeySalt(tenant,
// cache_salt)}), exactly what routing::MakePrefixKeyFromTokens computes for a token prompt with
// block_tokens = the engine's block size. So a request keyed by its exact token ids matches
// what the engine reported. The engine's block size must equal the configured one: an event
// with another is an error naming both, and nothing of that batch is applied.
//
// The engine-hash map. Per backend, engine block hash → our key(s) and the tiers holding it. It
// resolves BlockStored.parent_block_hash (a run continues its parent's chain, in its parent's
// domains) and BlockRemoved. Entries leave with their blocks; AllBlocksCleared clears the
// backend's map and slice; at most max_blocks_per_backend entries (beyond, a stored block is not
// indexed: counted in over_capacity).
//
// Domains of a first block (a BlockStored with no parent). The event carries token ids, maybe a
// LoRA name, and at best a salt hint; the router knows which domains recently sent a first block
// with these token ids to this backend (routing::DomainAttribution). The candidates are filtered
// by the event's evidence:
//   - lora_name given: only candidates whose model is that name (vLLM serves an adapter under its
//     LoRA name, and folds the name into every block's hash, as the model folds into our root);
//   - a salt given (SGLang's metadata.cache_salt, a map event's cache_salt): only candidates
//     that sent that salt;
//   - extra_keys given (vLLM's map form): the first block's entry is nil → the engine hashed it
//     with no salt: only unsalted candidates; an array → its strings other than lora_name are
//     the salt: only candidates that sent one of them (none → only unsalted candidates);
//   - no evidence (vLLM's array form, older SGLang): no filter.
// When no domain sent it to this backend through this router (another gateway replica did) and
// the event carries salt evidence (a salt, or vLLM's extra_keys), the candidates are the domains
// this router sent the same first block in to any backend (DomainAttribution::FleetCandidates),
// and failing those, for a block the evidence shows unsalted, the unsalted domains this router
// routes for (DomainAttribution::UnsaltedDomains: the engine keys an unsalted block by model and
// LoRA alone, so each of them would hit it), filtered the same way: the evidence, not the
// backend, is what keeps a salted block in its domain. Without evidence neither is used (a
// block of unknown salt is never guessed).
// Then: no candidate → not indexed (unattributed); one domain → indexed in it; several domains
// → indexed in all of them only when none of them is salted and all name the same model (the
// engine keyed the block by the same (model, no salt) for all: each of them would hit it), at
// most max_domains_per_block; otherwise not indexed (ambiguous). Never guessed: a salted
// tenant's block is indexed only in its own domain, or not at all — unless its dispatch record
// has left the window while another domain sent the same first block and the event carries no
// salt evidence, in which case the other domain may be told the backend holds a block it cannot
// use (a misprediction the engine's own salt isolation contains; it reveals no block content).
// Children of an unindexed block are not indexed either (their parent is not in the map).
//
// Tiers. Each engine block has a set of tiers: nil and "GPU" are the GPU, "CPU"/"CPU_PINNED" the
// host, "DISK", others one more. A block is held while any tier holds it: BlockStored adds its
// tier, BlockRemoved takes its tier away and removes the block from the index when none is left.
// AllBlocksCleared (vLLM's reset_prefix_cache) forgets every tier.
//
// Data-parallel ranks. A backend whose ranks have separate caches publishes one stream per rank;
// the writer keeps one map per BackendId. The gateway routes each rank as a target of its own
// (gateway/fleet/rank_targets.h), so each rank's stream is applied under its target's BackendId
// (BackendEventFeedOptions::rank_slices) and its slice is exactly that rank's cache. Applied
// under one BackendId (kv_events.route_ranks: false), the ranks share a slice: a rank's removal
// then drops a block another rank may still hold (an under-prediction, never a false hit), and
// the slice holds the union, over-predicting a request the engine sends to a rank without it.
//
// Usage:
//   BlockIndexWriter writer({.block_size = 16});
//   routing::IndexUpdates updates;
//   absl::Status s = writer.Apply(backend, batch, router.attribution(), updates);
//   router.ApplyIndexUpdates(backend, updates);
//
// Thread-safety: none; one owner (the router's strand).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "core/kv_events/event_decoder.h"
#include "core/routing/domain_attribution.h"
#include "core/routing/index_updates.h"
#include "core/routing/prefix_index.h"
#include "core/routing/probe_table.h"

namespace warmroute::kv_events {

struct BlockIndexWriterOptions {
  int block_size = 16;  // the engines' block size in tokens, = the routing key's block_tokens
  size_t max_blocks_per_backend = size_t{1} << 22;
  size_t max_domains_per_block = 4;
};

struct WriterCounters {
  int64_t stored_blocks = 0;   // blocks of BlockStored indexed (in at least one domain)
  int64_t removed_blocks = 0;  // blocks removed from the index (no tier left)
  int64_t tier_changes = 0;    // stores or removals that changed a block's tiers only
  int64_t cleared = 0;         // AllBlocksCleared, and Clear()
  int64_t unattributed_blocks = 0;  // first-block runs with no candidate domain
  int64_t fleet_attributed_blocks = 0;  // of the indexed: by FleetCandidates or UnsaltedDomains
  int64_t ambiguous_blocks = 0;     // first-block runs with several domains, not indexable
  int64_t orphan_blocks = 0;        // runs whose parent is not in the map
  int64_t unknown_removals = 0;     // BlockRemoved of a hash not in the map
  int64_t over_capacity = 0;        // blocks not indexed: the map was full
  int64_t block_size_mismatches = 0;
};

class BlockIndexWriter {
 public:
  explicit BlockIndexWriter(BlockIndexWriterOptions options);

  // Appends the changes `batch` makes to `backend`'s slice to `out` (not cleared first). An
  // event whose block_size differs from the configured one fails the batch before anything is
  // applied (FailedPrecondition naming both sizes).
  absl::Status Apply(routing::BackendId backend, const EventBatch& batch,
                     const routing::DomainAttribution& attribution, routing::IndexUpdates& out);
  // Forgets the backend's map and appends a kClear (a stream's rebuild, a health flap).
  void Clear(routing::BackendId backend, routing::IndexUpdates& out);
  // Forgets the backend (the router drops its slice itself).
  void RemoveBackend(routing::BackendId backend);

  size_t blocks(routing::BackendId backend) const;
  size_t MemoryBytes() const;
  const WriterCounters& counters() const { return counters_; }

 private:
  // A block of the engine-hash map (24 bytes; the map is a routing::ProbeTable, whose lookups
  // can be prefetched: in a slice of 512K blocks each one is a cache miss).
  struct Node {
    uint64_t engine_hash;
    uint64_t ours;  // our key in the first (usually only) domain
    uint8_t tiers;  // bit per Medium tier holding the block; 0: an empty slot
    bool more;      // further domains' keys in Backend::more

    static constexpr Node Empty() {
      return {.engine_hash = 0, .ours = 0, .tiers = 0, .more = false};
    }
    bool empty() const { return tiers == 0; }
    uint32_t key() const { return routing::Mix32(engine_hash); }
  };
  static constexpr size_t kMinMapSlots = 64;
  struct Backend {
    routing::ProbeTable<Node> blocks{kMinMapSlots};  // engine hash → node
    absl::flat_hash_map<uint64_t, absl::InlinedVector<uint64_t, 3>> more;

    // The slot of `engine_hash`, or routing::kNoSlot.
    size_t Find(uint64_t engine_hash) const {
      return blocks.Find(routing::Mix32(engine_hash),
                         [engine_hash](const Node& n) { return n.engine_hash == engine_hash; });
    }
    void Prefetch(uint64_t engine_hash) const { blocks.Prefetch(routing::Mix32(engine_hash)); }
  };
  using Roots = absl::InlinedVector<uint64_t, 4>;

  Backend& StateOf(routing::BackendId backend);
  void Stored(routing::BackendId backend, Backend& state, const EventBatch& batch, const Event& e,
              const routing::DomainAttribution& attribution, routing::IndexUpdates& out);
  void Removed(Backend& state, const EventBatch& batch, const Event& e,
               routing::IndexUpdates& out);
  // The roots of a first block's domains (empty: not indexable; counted).
  Roots Attribute(routing::BackendId backend, const EventBatch& batch, const Event& e,
                  const routing::DomainAttribution& attribution, size_t blocks);

  BlockIndexWriterOptions options_;
  std::vector<Backend> backends_;
  WriterCounters counters_;
  std::vector<uint64_t> scratch_;  // one domain's run of keys
};

}  // namespace warmroute::kv_events
