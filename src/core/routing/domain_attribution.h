// Who recently sent which first block to which backend: the evidence that attributes an engine's
// stored first block (a KV event's BlockStored with no parent) to an isolation domain.
//
// An engine's first block is keyed by (model, LoRA, cache_salt), but its KV events carry only the
// token ids (vLLM's array form and SGLang carry no salt at all; vLLM's map form may carry it in
// extra_keys). The router's index keys a chain by its domain root (prefix_key.h: model and
// PrefixKeySalt(tenant, cache_salt)). So when the router dispatches a token-keyed request (the
// caller gives its DispatchDomain to Router::SetDispatchDomain), it records here (backend,
// FirstBlockContentHash of its first block) → its domain: the root, and fingerprints of its model
// and of the cache_salt the engine saw. kv_events::BlockIndexWriter reads the records to
// attribute a stored first block; it never guesses (block_index_writer.h).
//
// Bounded: each backend keeps its last `records_per_backend` dispatches (a FIFO: the oldest
// record is forgotten first; a request recorded again counts again). A stored event arrives
// within a scheduler step or two of the dispatch, so a window of thousands of dispatches covers
// it with a wide margin.
//
// Usage:
//   DispatchDomain d = DomainOfTokenPrompt(model, tenant, cache_salt, tokens, block_tokens);
//   DomainAttribution attribution({});
//   attribution.Record(backend, d.first_block, d.record);
//   for (const DomainRecord& r : attribution.Candidates(backend, d.first_block)) ...
//
// Thread-safety: none; one owner (the Router).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "core/routing/prefix_index.h"

namespace warmroute::routing {

struct DomainRecord {
  uint64_t root = 0;      // the domain's chain root: RootBlockHash({model, "", PrefixKeySalt})
  uint64_t model_fp = 0;  // ModelFingerprint(request model)
  uint64_t salt_fp = 0;   // SaltFingerprint(cache_salt sent to the engine); 0: none
  uint32_t refs = 0;      // records of this (first block, root) in the window
};

struct DomainAttributionOptions {
  size_t records_per_backend = 16384;
};

// Fingerprints of a model name and of an engine-visible cache_salt (0 for the empty salt).
uint64_t ModelFingerprint(std::string_view model);
uint64_t SaltFingerprint(std::string_view cache_salt);

// A hash of one block's token ids alone, without parent or domain: the name under which a first
// block is recorded (never an index key).
uint64_t FirstBlockContentHash(std::span<const int32_t> block_tokens);

// What a dispatch of a token prompt records: its first block's content hash (0 when the prompt
// has no full block) and its domain.
struct DispatchDomain {
  uint64_t first_block = 0;
  DomainRecord record{};
};
// The domain of a request keyed by MakePrefixKeyFromTokens(model, PrefixKeySalt(tenant,
// cache_salt), tokens, {.block_tokens = block_tokens}); cache_salt is the salt the engine sees.
DispatchDomain DomainOfTokenPrompt(std::string_view model, std::string_view tenant,
                                   std::string_view cache_salt, std::span<const int32_t> tokens,
                                   int block_tokens);

class DomainAttribution {
 public:
  explicit DomainAttribution(DomainAttributionOptions options);

  // `first_block`: DispatchDomain::first_block (0 is ignored). `record.refs` is ignored.
  void Record(BackendId backend, uint64_t first_block, const DomainRecord& record);
  // The distinct domains that sent a first block with this content to `backend` within the
  // window. Valid until the next Record or Forget.
  std::span<const DomainRecord> Candidates(BackendId backend, uint64_t first_block) const;
  // The distinct domains that sent a first block with this content to any backend within the
  // backends' windows. What another gateway replica dispatched reaches this router only as its
  // engine's events: the domains this router itself sent the same content in are the candidates
  // then (kv_events::BlockIndexWriter uses them only when the event carries the engine's salt
  // evidence). Valid until the next Record or Forget.
  std::span<const DomainRecord> FleetCandidates(uint64_t first_block) const;
  // The distinct unsalted domains (salt_fp 0) of every record in the backends' windows,
  // whatever their first block. An engine keys an unsalted block by its model (and LoRA) alone,
  // so every unsalted domain of that model would hit a block the engine reports as unsalted:
  // kv_events::BlockIndexWriter indexes such a block, when no dispatch explains it, in these.
  // A copy: read only for an event no record explains, while Record runs for every dispatch.
  std::vector<DomainRecord> UnsaltedDomains() const;
  void Forget(BackendId backend);

  size_t records(BackendId backend) const;
  size_t MemoryBytes() const;

 private:
  struct Backend {
    absl::flat_hash_map<uint64_t, absl::InlinedVector<DomainRecord, 1>> by_block;
    std::vector<std::pair<uint64_t, uint64_t>> ring;  // (first block, root), oldest at `next`
    size_t next = 0;
  };
  using Domains = absl::InlinedVector<DomainRecord, 1>;
  // Adds one reference to `record` in `domains` (refs counted per root).
  static void AddRef(Domains& domains, const DomainRecord& record);
  // Drops one reference to `root` from by_block[first_block], erasing what reaches zero.
  static void DropRef(absl::flat_hash_map<uint64_t, Domains>& by_block, uint64_t first_block,
                      uint64_t root);
  void Release(Backend& state, uint64_t first_block, uint64_t root);
  // Drops one reference to `root` from unsalted_ (no-op for a salted root: never added).
  void DropUnsalted(uint64_t root);

  DomainAttributionOptions options_;
  std::vector<Backend> backends_;
  // Every backend's records by content: the sum of the backends' by_block.
  absl::flat_hash_map<uint64_t, Domains> fleet_;
  // Every backend's unsalted records by root, whatever their content (refs: records). A map: a
  // gateway may serve many unsalted tenants (each its own root), and every dispatch updates it.
  absl::flat_hash_map<uint64_t, DomainRecord> unsalted_;
};

}  // namespace warmroute::routing
