#include "core/routing/prefix_index.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <utility>

#include "common/prefetch.h"
#include "core/routing/probe_table.h"

// Layout, chosen for Match speed, O(1) updates and at most 64 bytes per entry:
//
// - Entries, one per (hash, backend) pair, 20 bytes, live in a slab of fixed-size chunks (stable
//   addresses, at most one chunk of slack), named by uint32 indices; freed entries go on a free
//   list. Each entry is on its backend's intrusive LRU list (doubly linked, most recent first).
// - The entry table maps (hash, backend) to the entry: 8-byte slots, a 32-bit tag mixed from both
//   and the entry index (a tag match is confirmed against the entry). Insert, Remove and eviction
//   find an entry in O(1), however many backends hold the same block.
// - The block table maps a block hash to its holder mask: 16-byte slots, the hash and a mask with
//   bit (backend % 64) set for every holder (0: the slot is empty). While the fleet has at most
//   64 backends the mask is exact, and Match reads one slot and does a few bit operations per
//   block: the set of backends still matching is a 64-bit word and-ed with each block's mask.
//   Beyond 64 backends the mask narrows the candidates, each confirmed in the entry table, and
//   a bit stands for every holder of that bit (backend % 64): the shared-bit table counts the
//   holders of a (hash, bit) pair that has two or more (16-byte slots, empty at most 64
//   backends), so a removal knows in one probe whether the bit stays.
// - Both tables are ProbeTables (probe_table.h): open addressing with linear probing and
//   backward-shift deletion (no tombstones), the load factor between 0.56 and 0.7 (they grow by
//   1.25x). So an entry costs at most 20 + 8 / 0.56 + 16 / 0.56 = 62.9 bytes, less when
//   backends share blocks (beyond 64 backends, at most 16 / 0.56 / 2 = 14.3 more for the
//   shared-bit table). Probes are prefetched kPrefetchDistance blocks ahead (Insert, Remove,
//   Truncate, Match's walk), and large tables ask for transparent huge pages: every probe is a
//   random access, and with 4 KiB pages it would also be a TLB miss. A walk is bound by how many
//   cache lines can be in flight at once, so Insert reads as few as it can: blocks its caller
//   says are held (the router's matched depth) skip the block table, and the held head is
//   followed along the LRU list where it lies in chain order (one entry table lookup per
//   stretch, not per block).
// - Neither the tables nor the slab shrink: memory follows the peak, itself bounded by
//   max_entries.
//
// Match's search. A backend's held blocks stay prefix-closed while nothing is removed out of LRU
// order: Insert touches a chain from its last block to its first, so a held block is always used
// more recently than every held block that extends it, and the LRU tail (what eviction and the
// bounds remove) never has a held child. Then a backend holds a leading run of any chain, the
// holder masks along a chain only lose bits, and Match (up to 64 backends) finds where each bit
// drops by a search instead of a walk: each round probes up to kMatchFanout evenly spaced blocks
// in every interval whose end masks differ, and keeps the sub-intervals whose end masks differ.
// No probe's address waits for another's load, so the processor has a round's probes in flight
// together: a round costs about one memory latency. (Prefetching them explicitly measured no
// faster, and made a cold chain's lookup three times slower, 0.086 against 0.027 us in
// BM_Match/kind:3: the first round's probes were fetched for nothing.) A 256-block chain held
// to one depth takes three rounds and about 20 probes instead of a probe per block; the walk is
// bound by how many lines can be in flight, the search by a few latencies.
// Truncate and Remove can take a block from under its held children, which then are orphans: the
// walk stops before them, the search would not. A removal that is not of the LRU tail puts the
// backend's orphan marker (an entry no table names) at the front of its list, or moves it there.
// Every orphan lies behind the marker: touching one means inserting a chain through it, which
// holds its parents again. While a backend that holds the chain's first block has a marker, Match
// walks block by block; the marker goes when eviction reaches it, everything behind it gone.

namespace warmroute::routing {
namespace {

constexpr uint32_t kNil = 0xffffffffu;
constexpr size_t kMaxEntries = size_t{1} << 30;
constexpr int kChunkBits = 14;  // 16,384 entries (320 KiB) per slab chunk
constexpr uint32_t kChunkSize = uint32_t{1} << kChunkBits;
constexpr size_t kMinSlots = 1024;
constexpr size_t kPrefetchDistance = 32;       // blocks ahead in Match and Insert
constexpr size_t kEntryPrefetchDistance = 12;  // Insert, held blocks: the entry itself
constexpr uint32_t kWalkPrefetchSteps = 16;    // Insert's held-head walk: entries ahead
constexpr size_t kVictimDistance = 8;   // Insert: evictions ahead whose entry and slots are fetched
constexpr size_t kMinSharedSlots = 64;  // the shared-bit table starts small (usually empty)
constexpr uint32_t kMatchFanout = 8;    // Match's search: blocks probed per interval and round
// Entry::backend of a backend's orphan marker (BackendState::marker), which no table names.
constexpr BackendId kMarkerBackend = 0xfffffffeu;

struct Entry {
  uint32_t hash_low;  // the block hash, split so that the entry packs into 20 bytes
  uint32_t hash_high;
  BackendId backend;
  uint32_t lru_prev;  // towards the most recently used
  uint32_t lru_next;  // towards the least recently used; on the free list: next free entry

  uint64_t hash() const { return uint64_t{hash_high} << 32 | hash_low; }
};
static_assert(sizeof(Entry) == 20);

inline uint64_t MaskBit(BackendId backend) { return uint64_t{1} << (backend & 63); }

inline uint32_t EntryTag(uint64_t hash, BackendId backend) {
  return Mix32(hash ^ (uint64_t{backend} + 1) * 0xc2b2ae3d27d4eb4full);
}

struct BlockSlot {
  uint64_t hash;
  uint64_t mask;  // 0: empty

  static constexpr BlockSlot Empty() { return {.hash = 0, .mask = 0}; }
  bool empty() const { return mask == 0; }
  uint32_t key() const { return Mix32(hash); }
};

// A (hash, bit) pair held by `holders` >= 2 backends of that bit (beyond 64 backends only).
struct SharedSlot {
  uint64_t hash;
  uint32_t bit;      // backend % 64
  uint32_t holders;  // 0: empty

  static constexpr SharedSlot Empty() { return {.hash = 0, .bit = 0, .holders = 0}; }
  bool empty() const { return holders == 0; }
  uint32_t key() const { return SharedKey(hash, bit); }
  static uint32_t SharedKey(uint64_t hash, uint32_t bit) {
    return Mix32(hash ^ (uint64_t{bit} + 1) * 0x9fb21c651e98df25ull);
  }
};

struct EntrySlot {
  uint32_t tag;    // EntryTag(hash, backend)
  uint32_t entry;  // kNil: empty

  static constexpr EntrySlot Empty() { return {.tag = 0, .entry = kNil}; }
  bool empty() const { return entry == kNil; }
  uint32_t key() const { return tag; }
};

struct BackendState {
  uint32_t mru = kNil;
  uint32_t lru = kNil;
  // kNil, or an entry on the LRU list that no table names: every entry behind it (less recently
  // used) may be an orphan (see Match). Not counted in `count`.
  uint32_t marker = kNil;
  int64_t capacity = 0;
  int64_t bound = 0;
  int64_t count = 0;
};

}  // namespace

struct PrefixIndex::Impl {
  explicit Impl(size_t max)
      : max_entries(std::min(max, kMaxEntries)),
        blocks(kMinSlots),
        entry_slots(kMinSlots),
        shared_bits(kMinSharedSlots) {}

  const size_t max_entries;
  std::vector<std::unique_ptr<Entry[]>> chunks;
  uint32_t allocated = 0;  // entries ever taken from the chunks
  uint32_t free_head = kNil;
  size_t size = 0;  // live entries
  ProbeTable<BlockSlot> blocks;
  ProbeTable<EntrySlot> entry_slots;
  ProbeTable<SharedSlot> shared_bits;
  std::vector<BackendState> backends;
  std::vector<uint32_t> held_head;  // Insert's scratch: the entries of a chain's held head
  uint64_t orphan_bits = 0;         // MaskBit of every backend with an orphan marker
  int64_t total_capacity = 0;

  Entry& At(uint32_t e) { return chunks[e >> kChunkBits][e & (kChunkSize - 1)]; }
  const Entry& At(uint32_t e) const { return chunks[e >> kChunkBits][e & (kChunkSize - 1)]; }

  size_t FindBlock(uint64_t hash) const {
    return blocks.Find(Mix32(hash), [hash](const BlockSlot& slot) { return slot.hash == hash; });
  }

  // The entry-table slot of (hash, backend), or kNoSlot.
  size_t FindEntrySlot(uint64_t hash, BackendId backend) const {
    const uint32_t tag = EntryTag(hash, backend);
    return entry_slots.Find(tag, [&](const EntrySlot& slot) {
      if (slot.tag != tag) return false;
      const Entry& entry = At(slot.entry);
      return entry.hash() == hash && entry.backend == backend;
    });
  }

  bool Holds(uint64_t hash, BackendId backend) const {
    return FindEntrySlot(hash, backend) != kNoSlot;
  }

  void Prefetch(uint64_t hash, BackendId backend) const {
    blocks.Prefetch(Mix32(hash));
    entry_slots.Prefetch(EntryTag(hash, backend));
  }

  // The second stage of Insert's prefetching: once the entry-table slots of (hash, backend) are
  // in cache (prefetched kPrefetchDistance blocks earlier), prefetches the entry the first slot
  // with its tag names: the entry a touch reads and relinks. A tag match is not confirmed (that
  // would read the entry), so now and then this prefetches another backend's entry.
  void PrefetchEntry(uint64_t hash, BackendId backend) const {
    const uint32_t tag = EntryTag(hash, backend);
    const size_t s =
        entry_slots.Find(tag, [tag](const EntrySlot& slot) { return slot.tag == tag; });
    if (s != kNoSlot) PrefetchForRead(&At(entry_slots[s].entry));
  }

  uint32_t NewEntry() {
    if (free_head != kNil) {
      // The free list is in the order entries were freed, scattered over the slab: the next
      // free entry is fetched now, for the next NewEntry (an insert of a run takes several).
      const uint32_t e = free_head;
      free_head = At(e).lru_next;
      if (free_head != kNil) PrefetchForRead(&At(free_head));
      return e;
    }
    if (allocated == chunks.size() * kChunkSize) {
      chunks.push_back(std::make_unique_for_overwrite<Entry[]>(kChunkSize));
    }
    return allocated++;
  }

  // Puts the stretch first..last (linked by lru_next from first; not in the list) into the
  // backend's LRU list right after `before` (kNil: at the front, the most recently used end).
  void LinkStretchAfter(BackendState& backend, uint32_t first, uint32_t last, uint32_t before) {
    const uint32_t after = before == kNil ? backend.mru : At(before).lru_next;
    At(first).lru_prev = before;
    At(last).lru_next = after;
    if (before != kNil) {
      At(before).lru_next = first;
    } else {
      backend.mru = first;
    }
    if (after != kNil) {
      At(after).lru_prev = last;
    } else {
      backend.lru = last;
    }
  }

  // Takes the stretch first..last (linked by lru_next from first) out of the backend's LRU list.
  void UnlinkStretch(BackendState& backend, uint32_t first, uint32_t last) {
    const uint32_t prev = At(first).lru_prev;
    const uint32_t next = At(last).lru_next;
    if (prev != kNil) {
      At(prev).lru_next = next;
    } else {
      backend.mru = next;
    }
    if (next != kNil) {
      At(next).lru_prev = prev;
    } else {
      backend.lru = prev;
    }
  }

  void LinkMostRecent(BackendState& backend, uint32_t e) { LinkStretchAfter(backend, e, e, kNil); }
  void UnlinkLru(BackendState& backend, uint32_t e) { UnlinkStretch(backend, e, e); }

  size_t FindShared(uint64_t hash, uint32_t bit) const {
    return shared_bits.Find(SharedSlot::SharedKey(hash, bit), [&](const SharedSlot& slot) {
      return slot.hash == hash && slot.bit == bit;
    });
  }

  // Another backend of `id`'s bit starts holding `hash`, whose bit is already set.
  void AcquireSharedBit(uint64_t hash, BackendId id) {
    const uint32_t bit = id & 63;
    if (const size_t s = FindShared(hash, bit); s != kNoSlot) {
      ++shared_bits[s].holders;
    } else {
      shared_bits.Add({.hash = hash, .bit = bit, .holders = 2});
    }
  }

  // A backend of `id`'s bit stops holding `hash`; true when another one of that bit still does.
  bool ReleaseSharedBit(uint64_t hash, BackendId id) {
    if (shared_bits.used() == 0) return false;
    const size_t s = FindShared(hash, id & 63);
    if (s == kNoSlot) return false;
    if (--shared_bits[s].holders == 1) shared_bits.Erase(s);
    return true;
  }

  void AddEntry(BackendId id, uint64_t hash) {
    const uint32_t e = NewEntry();
    Entry& entry = At(e);
    entry.hash_low = static_cast<uint32_t>(hash);
    entry.hash_high = static_cast<uint32_t>(hash >> 32);
    entry.backend = id;
    entry_slots.Add({.tag = EntryTag(hash, id), .entry = e});
    if (const size_t s = FindBlock(hash); s != kNoSlot) {
      // (hash, id) was absent: a set bit means another backend of the same bit holds it.
      if ((blocks[s].mask & MaskBit(id)) != 0) AcquireSharedBit(hash, id);
      blocks[s].mask |= MaskBit(id);
    } else {
      blocks.Add({.hash = hash, .mask = MaskBit(id)});
    }
    BackendState& backend = backends[id];
    LinkMostRecent(backend, e);
    ++backend.count;
    ++size;
  }

  // Removes the entry in entry-table slot `s`.
  void RemoveEntry(size_t s) {
    const uint32_t e = entry_slots[s].entry;
    Entry& entry = At(e);
    const uint64_t hash = entry.hash();
    const BackendId id = entry.backend;
    entry_slots.Erase(s);
    const size_t b = FindBlock(hash);
    if (b == kNoSlot) {
      std::fprintf(stderr, "PrefixIndex: entry %u has no block slot\n", e);
      std::abort();
    }
    // Up to 64 backends every holder has its own bit; beyond, the bit stays while another
    // backend of the same bit still holds the block (the shared-bit table counts them).
    if (!ReleaseSharedBit(hash, id)) blocks[b].mask &= ~MaskBit(id);
    if (blocks[b].mask == 0) blocks.Erase(b);
    BackendState& backend = backends[id];
    UnlinkLru(backend, e);
    --backend.count;
    --size;
    entry.backend = kNil;  // a free entry belongs to no backend (Insert's liveness check)
    entry.lru_next = free_head;
    free_head = e;
  }

  // Removes (hash, backend) if held, for Truncate and Remove: out of LRU order unless it is the
  // tail, so its held children (if any) become orphans (see Match's search).
  void RemoveHash(BackendId backend, uint64_t hash) {
    const size_t s = FindEntrySlot(hash, backend);
    if (s == kNoSlot) return;
    if (entry_slots[s].entry != backends[backend].lru) MarkOrphans(backend);
    RemoveEntry(s);
  }

  // RemoveHash for every hash of a list, with the prefetching Insert does: the block and
  // entry-table slots kPrefetchDistance hashes ahead, the entry the entry-table slot names
  // kEntryPrefetchDistance ahead. Unprefetched, every removal waits for its entry-table slot, its
  // entry and its block slot one after the other (a KV event's BlockRemoved lists 16-64 blocks).
  void RemoveHashes(BackendId id, std::span<const uint64_t> hashes) {
    const size_t n = hashes.size();
    for (size_t j = 0; j < std::min(n, kPrefetchDistance); ++j) Prefetch(hashes[j], id);
    for (size_t j = 0; j < std::min(n, kEntryPrefetchDistance); ++j) PrefetchEntry(hashes[j], id);
    for (size_t k = 0; k < n; ++k) {
      if (k + kPrefetchDistance < n) Prefetch(hashes[k + kPrefetchDistance], id);
      if (k + kEntryPrefetchDistance < n) PrefetchEntry(hashes[k + kEntryPrefetchDistance], id);
      RemoveHash(id, hashes[k]);
    }
  }

  // Puts the backend's orphan marker at the front of its LRU list: every entry held now is
  // behind it.
  void MarkOrphans(BackendId id) {
    BackendState& backend = backends[id];
    if (backend.marker == kNil) {
      backend.marker = NewEntry();
      Entry& marker = At(backend.marker);
      marker.hash_low = 0;
      marker.hash_high = 0;
      marker.backend = kMarkerBackend;
      orphan_bits |= MaskBit(id);
    } else if (backend.mru == backend.marker) {
      return;
    } else {
      UnlinkLru(backend, backend.marker);
    }
    LinkMostRecent(backend, backend.marker);
  }

  // Takes the marker off the list (eviction reached it: no orphan is left).
  void DropMarker(BackendId id) {
    BackendState& backend = backends[id];
    const uint32_t e = backend.marker;
    UnlinkLru(backend, e);
    backend.marker = kNil;
    At(e).backend = kNil;
    At(e).lru_next = free_head;
    free_head = e;
    orphan_bits &= ~MaskBit(id);
    for (size_t b = id & 63; b < backends.size(); b += 64) {
      if (backends[b].marker != kNil) orphan_bits |= MaskBit(static_cast<BackendId>(b));
    }
  }

  void EvictLeastRecent(BackendId backend) {
    if (backends[backend].marker != kNil && backends[backend].lru == backends[backend].marker) {
      DropMarker(backend);
      if (backends[backend].lru == kNil) return;
    }
    const uint32_t e = backends[backend].lru;
    const size_t s = FindEntrySlot(At(e).hash(), backend);
    if (s == kNoSlot || entry_slots[s].entry != e) {
      std::fprintf(stderr, "PrefixIndex: LRU entry %u is not in the entry table\n", e);
      std::abort();
    }
    RemoveEntry(s);
  }

  int64_t BoundOf(int64_t capacity) const {
    const auto max = static_cast<int64_t>(max_entries);
    if (total_capacity <= max) return capacity;
    return static_cast<int64_t>(static_cast<unsigned __int128>(capacity) * max_entries /
                                static_cast<uint64_t>(total_capacity));
  }

  void ApplyBound(BackendId id) {
    BackendState& backend = backends[id];
    backend.bound = BoundOf(backend.capacity);
    while (backend.count > backend.bound) EvictLeastRecent(id);
  }

  void Insert(BackendId id, std::span<const uint64_t> chain, size_t held_hint) {
    if (id >= backends.size()) return;
    BackendState& backend = backends[id];
    if (backend.bound <= 0) return;
    held_hint = std::min(held_hint, chain.size());
    // The walk goes from the last block to the first, with prefetches running ahead of it: the
    // block and entry-table slots kPrefetchDistance blocks ahead, and for the blocks the hint
    // says are held, the entry itself (whose index the entry-table slot names)
    // kEntryPrefetchDistance blocks ahead. A held block skips the block table altogether (one
    // line fewer per block: the walk is bound by how many lines can be in flight at once).
    auto prefetch_slots = [&](size_t k) {
      if (k < held_hint) {
        entry_slots.Prefetch(EntryTag(chain[k], id));
      } else {
        Prefetch(chain[k], id);
      }
    };
    auto prefetch_entry = [&](size_t k) {
      if (k < held_hint) PrefetchEntry(chain[k], id);
    };
    // Each new block beyond the bound evicts the least recently used entry; reading it, its
    // table slots and its list neighbour would be misses one after the other. A cursor runs
    // ahead of the LRU tail (along lru_prev) and fetches the entries it passes and their
    // slots, so an eviction finds them in cache. It only prefetches: an entry the walk touches
    // may leave the tail before the cursor's guess is used, which costs nothing but the guess.
    uint32_t victim_cursor = kNil;
    bool cursor_started = false;
    auto advance_cursor = [&] {
      if (victim_cursor == kNil || victim_cursor >= allocated) return;
      const Entry& entry = At(victim_cursor);
      Prefetch(entry.hash(), id);  // the slots its eviction reads
      victim_cursor = entry.lru_prev;
      if (victim_cursor != kNil && victim_cursor < allocated) PrefetchForRead(&At(victim_cursor));
    };
    auto before_eviction = [&] {
      if (!cursor_started) {  // kVictimDistance entries ahead, at most as many as new blocks
        cursor_started = true;
        victim_cursor = backend.lru;
        const size_t expected = chain.size() - std::min(chain.size(), held_hint);
        for (size_t i = 0; i < std::min(expected, kVictimDistance); ++i) advance_cursor();
      }
      advance_cursor();
    };
    // The chain's leading blocks the backend holds (as far as the hint says) are looked up first
    // and moved to the front last, as stretches (MoveHeldHeadToFront); the walk below does the
    // rest of the chain, from the last block down to them.
    const size_t m = FindHeldHead(id, chain.first(held_hint));
    const size_t n = chain.size();
    bool evicted = false;
    for (size_t j = 1; j <= std::min(n - m, kPrefetchDistance); ++j) prefetch_slots(n - j);
    for (size_t j = 1; j <= std::min(n - m, kEntryPrefetchDistance); ++j) prefetch_entry(n - j);
    for (size_t k = n; k-- > m;) {
      if (k >= m + kPrefetchDistance) prefetch_slots(k - kPrefetchDistance);
      if (k >= m + kEntryPrefetchDistance) prefetch_entry(k - kEntryPrefetchDistance);
      const uint64_t hash = chain[k];
      size_t s = kNoSlot;
      if (k < held_hint) {
        s = FindEntrySlot(hash, id);
      } else {
        // The block's mask rules out most absent (hash, backend) pairs without an entry lookup.
        const size_t b = FindBlock(hash);
        if (b != kNoSlot && (blocks[b].mask & MaskBit(id)) != 0) s = FindEntrySlot(hash, id);
      }
      if (s != kNoSlot) {
        const uint32_t e = entry_slots[s].entry;
        if (backend.mru != e) {
          UnlinkLru(backend, e);
          LinkMostRecent(backend, e);
        }
        continue;
      }
      if (backend.count >= backend.bound) {
        before_eviction();
        EvictLeastRecent(id);
        evicted = true;
      }
      AddEntry(id, hash);
    }
    MoveHeldHeadToFront(backend, id, chain.first(m), evicted);
  }

  // Finds `head`'s blocks in order and keeps their entries in `held_head` while the backend
  // holds them; returns how many it holds before the first miss. A chain's held blocks usually
  // sit in the backend's LRU list as stretches in chain order (see MoveHeldHeadToFront), so only
  // the first block of a stretch is looked up in the entry table: the rest are its list
  // successors, checked by their hashes (an entry on this backend's list with head[k]'s hash is
  // (head[k], id)'s entry, since pairs are unique). A lookup costs a tag mix, a probe and the
  // entry; a list step, the entry alone. No lookup is made ahead of the walk: prefetching every
  // block's entry-table slots and entry, as lookups would need, cost more than it saved, even in
  // a large index (BM_InsertHeldChain/hint:1 2.2-2.6 us with, 1.6-1.8 without).
  //
  // A list step would make each entry's address wait for the previous entry's load. But the
  // entries of a stretch were mostly taken from the slab one after another, so each step is
  // guessed to move as far through the slab as the last one did (`stride`), and the guess is
  // checked against lru_next. While the guesses hold, the branch is predicted and the next
  // entry's address does not wait for the load, so the loads of several steps overlap; and the
  // entry kWalkPrefetchSteps guesses ahead is prefetched (an entry index only, no lookup).
  size_t FindHeldHead(BackendId id, std::span<const uint64_t> head) {
    held_head.clear();
    const size_t n = head.size();
    uint32_t e = kNil;  // head[k-1]'s entry
    uint32_t stride = 0;
    for (size_t k = 0; k < n; ++k) {
      if (e != kNil) {
        const uint32_t next = At(e).lru_next;
        const uint32_t guess = e + stride;
        // The comparison goes through a value the compiler cannot see into, so that it does not
        // take `next` for `guess` where they are equal: the address would wait for the load.
        uint32_t differ = next ^ guess;
        asm("" : "+r"(differ));
        if (differ == 0) [[likely]] {
          e = guess;
          const uint32_t ahead = e + kWalkPrefetchSteps * stride;
          if (ahead < allocated) PrefetchForRead(&At(ahead));
        } else {
          stride = next - e;
          e = next;
        }
      }
      if (e == kNil || At(e).hash() != head[k]) {
        const size_t s = FindEntrySlot(head[k], id);
        if (s == kNoSlot) break;
        e = entry_slots[s].entry;
      }
      held_head.push_back(e);
    }
    return held_head.size();
  }

  // Makes head[0..m) (whose entries FindHeldHead found) the most recently used entries, head[0]
  // first: the order touching them one by one from the last to the first would leave, with the
  // rest of the list in its order. A chain's blocks usually still sit in the list as the last
  // insert of a chain sharing them left them, one stretch in chain order, so each stretch moves
  // as a whole (four links) and one already in place costs nothing. If the walk before evicted
  // any of them (its new blocks pushed the backend over its bound), they are touched one by one;
  // that is checked only when the walk `evicted` anything.
  void MoveHeldHeadToFront(BackendState& backend, BackendId id, std::span<const uint64_t> head,
                           bool evicted) {
    const size_t m = held_head.size();
    for (size_t k = 0; evicted && k < m; ++k) {
      const Entry& entry = At(held_head[k]);
      if (entry.backend != id || entry.hash() != head[k]) {
        TouchOneByOne(backend, id, head);
        return;
      }
    }
    uint32_t before = kNil;  // the stretch goes right after this entry; kNil: to the front
    for (size_t i = 0; i < m;) {
      // (A hash repeated in the chain, which a prefix chain never has, would name `before` again:
      // such an entry is left where it is, so that the list stays well formed.)
      if (held_head[i] == before) {
        ++i;
        continue;
      }
      size_t j = i + 1;
      while (j < m && At(held_head[j - 1]).lru_next == held_head[j] && held_head[j] != before) ++j;
      MoveStretchAfter(backend, held_head[i], held_head[j - 1], before);
      before = held_head[j - 1];
      i = j;
    }
  }

  // Moves the stretch first..last of a backend's LRU list (linked by lru_next from first) to
  // right after `before` (kNil: to the front).
  void MoveStretchAfter(BackendState& backend, uint32_t first, uint32_t last, uint32_t before) {
    if (At(first).lru_prev == before) return;  // already there
    UnlinkStretch(backend, first, last);
    LinkStretchAfter(backend, first, last, before);
  }

  // Insert's plain rule for `chain`, from its last block to its first: a held block becomes the
  // most recently used, a new one is added (evicting the least recently used at the bound).
  void TouchOneByOne(BackendState& backend, BackendId id, std::span<const uint64_t> chain) {
    for (size_t k = chain.size(); k-- > 0;) {
      const size_t s = FindEntrySlot(chain[k], id);
      if (s != kNoSlot) {
        const uint32_t e = entry_slots[s].entry;
        if (backend.mru != e) {
          UnlinkLru(backend, e);
          LinkMostRecent(backend, e);
        }
        continue;
      }
      if (backend.count >= backend.bound) EvictLeastRecent(id);
      AddEntry(id, chain[k]);
    }
  }

  uint64_t MaskOf(uint64_t hash) const {
    const size_t s = FindBlock(hash);
    return s == kNoSlot ? 0 : blocks[s].mask;
  }

  // Match's search (see the top of this file) for at most 64 backends, `all` their bits: sets
  // depth[b] for every holder b of chain[0] and returns true, or returns false without a result
  // when one of those holders may have orphans (the caller walks). Intervals (lo, hi) of block
  // positions with the masks M(lo) and M(hi) known and different; M(chain.size()) = 0. Each
  // round splits every interval at up to kMatchFanout points; a backend whose bit is in M(a) but
  // not in M(a + 1) holds a + 1 leading blocks.
  bool SearchDepths(std::span<const uint64_t> chain, uint64_t all,
                    std::vector<int32_t>& depth) const {
    struct Interval {
      uint32_t lo, hi;
      uint64_t mlo, mhi;
    };
    // At most one interval per distinct depth, and at most 64 distinct depths.
    std::array<Interval, 64> intervals;
    std::array<Interval, 64> next;
    size_t count = 0;
    // The split points of (lo, hi), hi - lo >= 2: lo + (hi - lo) * j / parts for 0 < j < parts.
    auto for_each_point = [](const Interval& iv, auto visit) {
      const uint64_t width = iv.hi - iv.lo;
      const uint64_t parts = std::min<uint64_t>(width, kMatchFanout + 1);
      for (uint64_t j = 1; j < parts; ++j) visit(static_cast<uint32_t>(iv.lo + width * j / parts));
    };
    size_t kept = 0;
    auto keep = [&](uint32_t lo, uint32_t hi, uint64_t mlo, uint64_t mhi) {
      if (mlo == mhi) return;
      if (hi - lo == 1) {
        for (uint64_t dropped = mlo & ~mhi; dropped != 0; dropped &= dropped - 1) {
          depth[std::countr_zero(dropped)] = static_cast<int32_t>(hi);
        }
      } else {
        next[kept++] = {.lo = lo, .hi = hi, .mlo = mlo, .mhi = mhi};
      }
    };
    const auto n = static_cast<uint32_t>(chain.size());
    Interval first = {.lo = 0, .hi = n, .mlo = MaskOf(chain[0]) & all, .mhi = 0};
    if ((first.mlo & orphan_bits) != 0) return false;
    if (n == 1) {
      keep(0, 1, first.mlo, 0);
      return true;
    }
    if (first.mlo != 0) intervals[count++] = first;
    while (count > 0) {
      kept = 0;
      for (size_t i = 0; i < count; ++i) {
        const Interval& iv = intervals[i];
        uint32_t lo = iv.lo;
        uint64_t mlo = iv.mlo;
        for_each_point(iv, [&](uint32_t k) {
          const uint64_t m = MaskOf(chain[k]) & mlo;
          keep(lo, k, mlo, m);
          lo = k;
          mlo = m;
        });
        keep(lo, iv.hi, mlo, iv.mhi & mlo);
      }
      std::copy_n(next.begin(), kept, intervals.begin());
      count = kept;
    }
    return true;
  }

  void Match(std::span<const uint64_t> chain, std::vector<int32_t>& depth) const {
    depth.assign(backends.size(), 0);
    if (backends.empty() || size == 0 || chain.empty()) return;
    // Exact masks up to 64 backends: the search, unless a holder may have orphans.
    const uint64_t all =
        backends.size() >= 64 ? ~uint64_t{0} : (uint64_t{1} << backends.size()) - 1;
    if (backends.size() <= 64 && SearchDepths(chain, all, depth)) return;
    // The walk, block by block.
    const size_t ahead = std::min(chain.size(), kPrefetchDistance);
    for (size_t i = 0; i < ahead; ++i) blocks.Prefetch(Mix32(chain[i]));
    if (backends.size() <= 64) {
      // `alive` is the set of backends holding every block so far.
      uint64_t alive = all;
      for (size_t i = 0; i < chain.size(); ++i) {
        if (i + ahead < chain.size()) blocks.Prefetch(Mix32(chain[i + ahead]));
        const uint64_t next = alive & MaskOf(chain[i]);
        for (uint64_t dead = alive & ~next; dead != 0; dead &= dead - 1) {
          depth[std::countr_zero(dead)] = static_cast<int32_t>(i);
        }
        alive = next;
        if (alive == 0) return;
      }
      for (; alive != 0; alive &= alive - 1) {
        depth[std::countr_zero(alive)] = static_cast<int32_t>(chain.size());
      }
      return;
    }
    // Beyond 64 backends: `alive` lists the backends holding every block so far; the block mask
    // narrows each block's candidates to the alive backends of a set bit.
    std::vector<BackendId> alive;
    for (size_t i = 0; i < chain.size(); ++i) {
      if (i + ahead < chain.size()) blocks.Prefetch(Mix32(chain[i + ahead]));
      const uint64_t mask = MaskOf(chain[i]);
      if (i == 0) {
        for (uint64_t bits = mask; bits != 0; bits &= bits - 1) {
          for (auto b = static_cast<BackendId>(std::countr_zero(bits)); b < backends.size();
               b += 64) {
            if (Holds(chain[0], b)) alive.push_back(b);
          }
        }
      } else {
        size_t kept = 0;
        for (BackendId b : alive) {
          if ((mask & MaskBit(b)) != 0 && Holds(chain[i], b)) {
            alive[kept++] = b;
          } else {
            depth[b] = static_cast<int32_t>(i);
          }
        }
        alive.resize(kept);
      }
      if (alive.empty()) return;
    }
    for (BackendId b : alive) depth[b] = static_cast<int32_t>(chain.size());
  }

  size_t MemoryBytes() const {
    return sizeof(Impl) + chunks.size() * kChunkSize * sizeof(Entry) +
           chunks.capacity() * sizeof(chunks[0]) + blocks.allocated_bytes() +
           entry_slots.allocated_bytes() + shared_bits.allocated_bytes() +
           backends.capacity() * sizeof(BackendState) + held_head.capacity() * sizeof(uint32_t);
  }
};

PrefixIndex::PrefixIndex(PrefixIndexOptions options)
    : impl_(std::make_unique<Impl>(options.max_entries)) {}

PrefixIndex::~PrefixIndex() = default;

void PrefixIndex::SetCapacity(BackendId backend, int64_t capacity_blocks) {
  Impl& impl = *impl_;
  const int64_t capacity = std::max<int64_t>(capacity_blocks, 0);
  if (backend >= impl.backends.size()) {
    if (capacity == 0) return;
    impl.backends.resize(size_t{backend} + 1);
  }
  const auto max = static_cast<int64_t>(impl.max_entries);
  const bool was_scaled = impl.total_capacity > max;
  impl.total_capacity += capacity - impl.backends[backend].capacity;
  impl.backends[backend].capacity = capacity;
  if (capacity == 0) Clear(backend);
  if (was_scaled || impl.total_capacity > max) {
    for (BackendId id = 0; id < impl.backends.size(); ++id) impl.ApplyBound(id);
  } else {
    impl.ApplyBound(backend);
  }
}

std::vector<int32_t> PrefixIndex::Match(std::span<const uint64_t> chain) const {
  std::vector<int32_t> depth;
  impl_->Match(chain, depth);
  return depth;
}

void PrefixIndex::Match(std::span<const uint64_t> chain, std::vector<int32_t>& depth) const {
  impl_->Match(chain, depth);
}

void PrefixIndex::Insert(BackendId backend, std::span<const uint64_t> chain, size_t held_hint) {
  impl_->Insert(backend, chain, held_hint);
}

void PrefixIndex::Truncate(BackendId backend, std::span<const uint64_t> chain, size_t keep_blocks) {
  if (backend >= impl_->backends.size() || keep_blocks >= chain.size()) return;
  impl_->RemoveHashes(backend, chain.subspan(keep_blocks));
}

void PrefixIndex::Remove(BackendId backend, std::span<const uint64_t> hashes) {
  if (backend >= impl_->backends.size()) return;
  impl_->RemoveHashes(backend, hashes);
}

void PrefixIndex::Clear(BackendId backend) {
  if (backend >= impl_->backends.size()) return;
  while (impl_->backends[backend].lru != kNil) impl_->EvictLeastRecent(backend);
}

size_t PrefixIndex::NumBackends() const { return impl_->backends.size(); }

size_t PrefixIndex::entries() const { return impl_->size; }

size_t PrefixIndex::entries(BackendId backend) const {
  return backend < impl_->backends.size() ? static_cast<size_t>(impl_->backends[backend].count) : 0;
}

size_t PrefixIndex::bound(BackendId backend) const {
  return backend < impl_->backends.size() ? static_cast<size_t>(impl_->backends[backend].bound) : 0;
}

size_t PrefixIndex::MemoryBytes() const { return impl_->MemoryBytes(); }

}  // namespace warmroute::routing
