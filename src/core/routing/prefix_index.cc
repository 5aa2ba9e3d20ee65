#include "core/routing/prefix_index.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <utility>

// Layout, chosen for Match speed, O(1) updates and at most 64 bytes per entry:
//
// - Each backend's LRU order is a ring: a circular buffer of the block hashes it holds, least
//   recently used at the head, plus a bitmap of stale slots. A use appends the hash at the tail
//   and the slot it had before goes stale (lazy invalidation); an add appends; a removal marks its
//   slot stale; eviction pops the head, skipping stale slots. The live slots are in exact LRU
//   order, and eviction reads sequential memory: the next victims' hashes are known without
//   chasing a pointer per victim (a linked LRU list made every eviction two dependent misses),
//   so their table slots are prefetched a few evictions ahead. A full ring grows (doubling, up to
//   2 * bound + 16 slots) or, at that size, is compacted from its tail, where a prompt's repeated
//   uses leave their stale slots: a window ending at the tail, doubled until compacting it frees
//   a quarter of it (at worst the whole ring, which then frees at least half). Ring: at most
//   8 * 2 + 2 / 8 = 16.25 bytes per entry (plus 16 slots per backend).
// - The entry table maps (hash, backend) to the entry's ring slot: 8-byte slots, a 32-bit tag
//   mixed from both and the ring position. A tag match is confirmed by the backend's ring (that
//   position is live and holds the hash), so there is no separate entry record. Two backends'
//   entries of one hash whose tags and positions both coincide are equal slots, interchangeable,
//   so the table stays exact. Insert, Remove and eviction find an entry in O(1), however many
//   backends hold the same block.
// - The block table maps a block hash to its holder mask: 16-byte slots, the hash and a mask with
//   bit (backend % 64) set for every holder (0: the slot is empty). While the fleet has at most
//   64 backends the mask is exact, and Match reads one slot and does a few bit operations per
//   block: the set of backends still matching is a 64-bit word and-ed with each block's mask.
//   Beyond 64 backends the mask narrows the candidates, each confirmed in the entry table, and
//   a bit stands for every holder of that bit (backend % 64): the shared-bit table counts the
//   holders of a (hash, bit) pair that has two or more (16-byte slots, empty at most 64
//   backends), so a removal knows in one probe whether the bit stays.
// - The tables are open addressing with linear probing and backward-shift deletion (no
//   tombstones), the load factor between 0.64 and 0.8 (they grow by 1.25x). So an entry costs at
//   most 16.25 + 8 / 0.64 + 16 / 0.64 = 53.75 bytes, less when backends share blocks (beyond 64
//   backends, at most 16 / 0.64 / 2 = 12.5 more for the shared-bit table). Probes are
//   prefetched kPrefetchDistance blocks ahead, and large tables ask for transparent huge pages:
//   every probe is a random access, and with 4 KiB pages it would also be a TLB miss.
// - Insert runs in two passes: the first only prefetches (every block's table slots, the ring
//   slot of every block the mask says the backend may hold) and counts the blocks it will add,
//   hence the victims; the second applies the uses, adds and evictions in the documented order.
// - The tables do not shrink: memory follows the peak, itself bounded by max_entries.

namespace warmroute::routing {
namespace {

constexpr uint32_t kNil = 0xffffffffu;
constexpr size_t kNoSlot = ~size_t{0};
constexpr size_t kMaxEntries = size_t{1} << 30;
constexpr size_t kMinSlots = 1024;
constexpr size_t kPrefetchDistance = 32;  // blocks ahead in Match and Insert
constexpr size_t kMinSharedSlots = 64;    // the shared-bit table starts small (usually empty)

inline uint64_t MaskBit(BackendId backend) { return uint64_t{1} << (backend & 63); }

// 32 well-mixed bits (block hashes are XXH3 outputs, but KV events and tests may hand us small
// integers).
inline uint32_t Mix32(uint64_t x) {
  return static_cast<uint32_t>(((x ^ (x >> 29)) * 0x9e3779b97f4a7c15ull) >> 32);
}

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
  uint32_t tag;  // EntryTag(hash, backend)
  uint32_t pos;  // the entry's slot in its backend's ring; kNil: empty

  static constexpr EntrySlot Empty() { return {.tag = 0, .pos = kNil}; }
  bool empty() const { return pos == kNil; }
  uint32_t key() const { return tag; }
};

// Open addressing with linear probing over slots of type Slot, whose home is derived from the
// 32-bit Slot::key(). Large arrays are 2 MiB-aligned and asked for transparent huge pages.
template <typename Slot>
class ProbeTable {
 public:
  explicit ProbeTable(size_t size) : size_(size) {
    constexpr size_t kHugePage = size_t{2} << 20;
    const size_t bytes = size * sizeof(Slot);
    // Huge pages from two on; the tail that does not fill a huge page stays in small pages.
    const size_t alignment = bytes >= 2 * kHugePage ? kHugePage : 64;
    void* memory = nullptr;
    if (posix_memalign(&memory, alignment, bytes) != 0) {
      std::fprintf(stderr, "PrefixIndex: out of memory for %zu table slots\n", size);
      std::abort();
    }
    slots_.reset(static_cast<Slot*>(memory));
    if (alignment == kHugePage) madvise(memory, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);
    allocated_bytes_ = bytes;
    std::uninitialized_fill_n(slots_.get(), size, Slot::Empty());
  }

  size_t allocated_bytes() const { return allocated_bytes_; }
  size_t used() const { return used_; }
  size_t size() const { return size_; }
  Slot& operator[](size_t i) { return slots_[i]; }
  const Slot& operator[](size_t i) const { return slots_[i]; }

  // The first slot from key's home on for which matches(slot) holds, or kNoSlot.
  template <typename Matches>
  size_t Find(uint32_t key, Matches matches) const {
    for (size_t i = Home(key);;) {
      const Slot& slot = slots_[i];
      if (slot.empty()) return kNoSlot;
      if (matches(slot)) return i;
      if (++i == size_) i = 0;
    }
  }

  // Prefetches the first two cache lines of key's probe run (a lookup of an absent key reads
  // about six slots; prefetching only the first line left half of those lookups a miss).
  void Prefetch(uint32_t key) const {
    const char* home = reinterpret_cast<const char*>(&slots_[Home(key)]);
    __builtin_prefetch(home);
    __builtin_prefetch(home + 64);
  }

  // Adds a non-empty slot whose key is not in the table yet; grows the table first if needed.
  void Add(const Slot& slot) {
    if (5 * (used_ + 1) > 4 * size_) {
      ProbeTable bigger(size_ + size_ / 4);
      for (size_t i = 0; i < size_; ++i) {
        if (!slots_[i].empty()) bigger.Place(slots_[i]);
      }
      *this = std::move(bigger);
    }
    Place(slot);
  }

  // Backward-shift deletion: later slots of the probe run move back so no lookup stops early.
  void Erase(size_t hole) {
    for (size_t j = hole;;) {
      if (++j == size_) j = 0;
      if (slots_[j].empty()) break;
      const size_t home = Home(slots_[j].key());
      // The slot at j may fill the hole unless its home lies cyclically in (hole, j].
      const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (!stays) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = Slot::Empty();
    --used_;
  }

 private:
  size_t Home(uint32_t key) const { return (uint64_t{key} * size_) >> 32; }

  void Place(const Slot& slot) {
    size_t i = Home(slot.key());
    while (!slots_[i].empty()) {
      if (++i == size_) i = 0;
    }
    slots_[i] = slot;
    ++used_;
  }

  struct Free {
    void operator()(Slot* p) const { std::free(p); }
  };
  std::unique_ptr<Slot[], Free> slots_;
  size_t size_ = 0;
  size_t used_ = 0;
  size_t allocated_bytes_ = 0;
};

// A backend's LRU order: the block hashes it holds, least recently used at `head`, `size`
// slots of which some are stale (flagged in `stale`). Every slot outside the window
// [head, head + size) is flagged stale too, so "not stale" means "a live entry's slot".
class Ring {
 public:
  uint32_t capacity() const { return capacity_; }
  uint32_t size() const { return size_; }
  bool full() const { return size_ == capacity_; }
  size_t allocated_bytes() const {
    return size_t{capacity_} * sizeof(uint64_t) + Words(capacity_) * sizeof(uint64_t);
  }

  // The slot `offset` places after the head.
  uint32_t Pos(uint32_t offset) const {
    const uint32_t p = head_ + offset;
    return p >= capacity_ ? p - capacity_ : p;
  }
  uint32_t Last() const { return Pos(size_ - 1); }  // REQUIRES: not empty
  uint64_t hash(uint32_t pos) const { return hashes_[pos]; }
  const uint64_t* hash_address(uint32_t pos) const { return &hashes_[pos]; }
  bool Live(uint32_t pos) const { return (stale_[pos >> 6] >> (pos & 63) & 1) == 0; }
  // A live slot holding `hash` (what confirms an entry-table slot).
  bool Holds(uint32_t pos, uint64_t hash) const {
    return pos < capacity_ && Live(pos) && hashes_[pos] == hash;
  }
  void MarkStale(uint32_t pos) { stale_[pos >> 6] |= uint64_t{1} << (pos & 63); }

  // Appends `hash` as the most recently used; returns its slot. REQUIRES: not full.
  uint32_t Append(uint64_t hash) {
    const uint32_t pos = Pos(size_++);
    hashes_[pos] = hash;
    stale_[pos >> 6] &= ~(uint64_t{1} << (pos & 63));
    return pos;
  }
  // Drops the head slot (already stale, or its entry is being removed).
  void PopHead() {
    MarkStale(head_);
    head_ = Pos(1);
    --size_;
  }
  // Moves the live slot `from` to the stale slot `to`.
  void Move(uint32_t from, uint32_t to) {
    hashes_[to] = hashes_[from];
    stale_[to >> 6] &= ~(uint64_t{1} << (to & 63));
    MarkStale(from);
  }
  void Shrink(uint32_t size) { size_ = size; }  // REQUIRES: the dropped slots are stale

  // An empty ring of `capacity` slots.
  static Ring WithCapacity(uint32_t capacity) {
    Ring ring;
    ring.capacity_ = capacity;
    if (capacity > 0) {
      ring.hashes_ = std::make_unique_for_overwrite<uint64_t[]>(capacity);
      ring.stale_ = std::make_unique<uint64_t[]>(Words(capacity));
      std::fill_n(ring.stale_.get(), Words(capacity), ~uint64_t{0});
    }
    return ring;
  }

 private:
  static size_t Words(uint32_t capacity) { return (size_t{capacity} + 63) / 64; }

  std::unique_ptr<uint64_t[]> hashes_;
  std::unique_ptr<uint64_t[]> stale_;  // bit set: stale
  uint32_t capacity_ = 0;
  uint32_t head_ = 0;
  uint32_t size_ = 0;
};

struct BackendState {
  Ring ring;
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
  size_t size = 0;  // live entries
  ProbeTable<BlockSlot> blocks;
  ProbeTable<EntrySlot> entry_slots;
  ProbeTable<SharedSlot> shared_bits;
  std::vector<BackendState> backends;
  int64_t total_capacity = 0;
  std::vector<uint64_t> victims;  // Insert's scratch: the hashes it will evict next
  std::vector<size_t> hints;      // Insert's scratch: per block, its entry slot or kNoSlot

  size_t FindBlock(uint64_t hash) const {
    return blocks.Find(Mix32(hash), [hash](const BlockSlot& slot) { return slot.hash == hash; });
  }

  // The entry-table slot of (hash, backend), or kNoSlot. A slot is confirmed by the backend's
  // ring: the position it names is live and holds `hash`. (Two backends' entries of one hash
  // whose tags and positions both coincide are equal slots, so either one may be returned.)
  size_t FindEntrySlot(uint64_t hash, BackendId backend) const {
    const uint32_t tag = EntryTag(hash, backend);
    const Ring& ring = backends[backend].ring;
    return entry_slots.Find(
        tag, [&](const EntrySlot& slot) { return slot.tag == tag && ring.Holds(slot.pos, hash); });
  }

  bool Holds(uint64_t hash, BackendId backend) const {
    return FindEntrySlot(hash, backend) != kNoSlot;
  }

  // Like FindEntrySlot, but the block's mask rules out most absent pairs first.
  size_t FindHeldSlot(uint64_t hash, BackendId backend) const {
    const size_t b = FindBlock(hash);
    if (b == kNoSlot || (blocks[b].mask & MaskBit(backend)) == 0) return kNoSlot;
    return FindEntrySlot(hash, backend);
  }

  void Prefetch(uint64_t hash, BackendId backend) const {
    blocks.Prefetch(Mix32(hash));
    entry_slots.Prefetch(EntryTag(hash, backend));
  }

  // The largest ring a backend of this bound gets: about twice its bound, so a full ring is at
  // least half stale and compacting it all frees at least half of it.
  static uint32_t MaxRing(int64_t bound) {
    return bound <= 0 ? 0 : static_cast<uint32_t>(2 * bound + 16);
  }

  // The entry-table slot of the live entry in ring slot `pos` of backend `id`.
  size_t SlotOfLive(BackendId id, uint32_t pos) const {
    const size_t s = FindEntrySlot(backends[id].ring.hash(pos), id);
    if (s == kNoSlot || entry_slots[s].pos != pos) {
      std::fprintf(stderr, "PrefixIndex: ring slot %u of backend %u has no entry\n", pos, id);
      std::abort();
    }
    return s;
  }

  // Moves backend `id`'s live slots, in order, into a new ring of `capacity` slots.
  // REQUIRES: capacity >= the backend's entry count.
  void Rebuild(BackendId id, uint32_t capacity) {
    Ring& ring = backends[id].ring;
    Ring fresh = Ring::WithCapacity(capacity);
    for (uint32_t i = 0; i < ring.size(); ++i) {
      if (i + kPrefetchDistance < ring.size()) {
        const uint32_t ahead = ring.Pos(i + kPrefetchDistance);
        entry_slots.Prefetch(EntryTag(ring.hash(ahead), id));
      }
      const uint32_t pos = ring.Pos(i);
      if (!ring.Live(pos)) continue;
      // Found against the old ring; a slot already given its new position could only be taken
      // for an equal slot (see FindEntrySlot), so the table stays right.
      const size_t s = SlotOfLive(id, pos);
      entry_slots[s].pos = fresh.Append(ring.hash(pos));
    }
    ring = std::move(fresh);
  }

  // Compacts the last `window` slots of the ring (keeps its live slots, in order, at the
  // window's start); returns the number of slots freed.
  uint32_t CompactTail(BackendId id, uint32_t window) {
    Ring& ring = backends[id].ring;
    const uint32_t first = ring.size() - window;
    for (uint32_t i = first; i < ring.size(); ++i) {
      const uint32_t pos = ring.Pos(i);
      if (ring.Live(pos)) entry_slots.Prefetch(EntryTag(ring.hash(pos), id));
    }
    uint32_t kept = first;
    for (uint32_t i = first; i < ring.size(); ++i) {
      const uint32_t pos = ring.Pos(i);
      if (!ring.Live(pos)) continue;
      const uint32_t to = ring.Pos(kept++);
      if (to == pos) continue;
      entry_slots[SlotOfLive(id, pos)].pos = to;
      ring.Move(pos, to);
    }
    const uint32_t freed = ring.size() - kept;
    ring.Shrink(kept);
    return freed;
  }

  // Makes room for one more slot in backend `id`'s full ring: grows it while it is at most half
  // stale and below MaxRing, else compacts a window ending at the tail (where a prompt's repeated
  // uses leave their stale slots), doubled until compacting it frees a quarter of it.
  void MakeRoom(BackendId id) {
    const BackendState& backend = backends[id];
    const Ring& ring = backend.ring;
    const uint32_t max = MaxRing(backend.bound);
    if (ring.capacity() < max && 2 * static_cast<uint64_t>(backend.count) >= ring.capacity()) {
      Rebuild(id,
              static_cast<uint32_t>(std::min<uint64_t>(max, 2 * uint64_t{ring.capacity()} + 16)));
      return;
    }
    for (uint32_t window = std::min<uint32_t>(ring.size(), 1024);;) {
      const uint32_t before = ring.size();
      const uint32_t freed = CompactTail(id, window);
      if (freed > 0 && (4 * freed >= window || window == before)) return;
      if (window == before) {
        std::fprintf(stderr, "PrefixIndex: a full ring has no stale slot\n");
        std::abort();
      }
      window = std::min(2 * window, ring.size());
    }
  }

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

  // Adds (hash, id) as its most recently used entry. REQUIRES: absent.
  void AddEntry(BackendId id, uint64_t hash) {
    Ring& ring = backends[id].ring;
    if (ring.full()) MakeRoom(id);
    entry_slots.Add({.tag = EntryTag(hash, id), .pos = ring.Append(hash)});
    if (const size_t s = FindBlock(hash); s != kNoSlot) {
      // (hash, id) was absent: a set bit means another backend of the same bit holds it.
      if ((blocks[s].mask & MaskBit(id)) != 0) AcquireSharedBit(hash, id);
      blocks[s].mask |= MaskBit(id);
    } else {
      blocks.Add({.hash = hash, .mask = MaskBit(id)});
    }
    ++backends[id].count;
    ++size;
  }

  // Makes (hash, id) its most recently used entry; false if it is absent.
  // `hint`: an entry-table slot that may be its (checked), or kNoSlot.
  bool Use(BackendId id, uint64_t hash, size_t hint) {
    const bool hinted = hint < entry_slots.size() && entry_slots[hint].tag == EntryTag(hash, id) &&
                        backends[id].ring.Holds(entry_slots[hint].pos, hash);
    size_t s = hinted ? hint : FindHeldSlot(hash, id);
    if (s == kNoSlot) return false;
    Ring& ring = backends[id].ring;
    if (entry_slots[s].pos == ring.Last()) return true;
    if (ring.full()) {
      MakeRoom(id);  // moves ring slots and so entry-table positions
      s = FindEntrySlot(hash, id);
    }
    ring.MarkStale(entry_slots[s].pos);
    entry_slots[s].pos = ring.Append(hash);
    return true;
  }

  // Removes the entry in entry-table slot `s`, which is (hash, id)'s.
  void RemoveEntry(size_t s, BackendId id, uint64_t hash) {
    backends[id].ring.MarkStale(entry_slots[s].pos);
    entry_slots.Erase(s);
    const size_t b = FindBlock(hash);
    if (b == kNoSlot) {
      std::fprintf(stderr, "PrefixIndex: an entry of backend %u has no block slot\n", id);
      std::abort();
    }
    // Up to 64 backends every holder has its own bit; beyond, the bit stays while another
    // backend of the same bit still holds the block (the shared-bit table counts them).
    if (!ReleaseSharedBit(hash, id)) blocks[b].mask &= ~MaskBit(id);
    if (blocks[b].mask == 0) blocks.Erase(b);
    --backends[id].count;
    --size;
  }

  void RemoveHash(BackendId backend, uint64_t hash) {
    const size_t s = FindEntrySlot(hash, backend);
    if (s != kNoSlot) RemoveEntry(s, backend, hash);
  }

  // REQUIRES: the backend holds an entry.
  void EvictLeastRecent(BackendId id) {
    Ring& ring = backends[id].ring;
    uint32_t pos = ring.Pos(0);
    for (; !ring.Live(pos); pos = ring.Pos(0)) ring.PopHead();
    const uint64_t hash = ring.hash(pos);
    RemoveEntry(SlotOfLive(id, pos), id, hash);
    ring.PopHead();
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
    const uint32_t max = MaxRing(backend.bound);
    if (backend.ring.capacity() > max) Rebuild(id, max);
  }

  void Insert(BackendId id, std::span<const uint64_t> chain) {
    if (id >= backends.size()) return;
    BackendState& backend = backends[id];
    if (backend.bound <= 0) return;
    // Pass 1, prefetching only: the table slots of every block (kPrefetchDistance ahead), the
    // ring slot of every block the mask says the backend may hold (its entry-table slot is kept
    // as a hint for pass 2, which checks it), and so the number of blocks it will add.
    const Ring& ring = backend.ring;
    int64_t added = 0;
    const size_t ahead = std::min(chain.size(), kPrefetchDistance);
    hints.assign(chain.size(), kNoSlot);
    for (size_t j = 1; j <= ahead; ++j) Prefetch(chain[chain.size() - j], id);
    for (size_t k = chain.size(); k-- > 0;) {
      if (k >= kPrefetchDistance) Prefetch(chain[k - kPrefetchDistance], id);
      const size_t b = FindBlock(chain[k]);
      if (b == kNoSlot || (blocks[b].mask & MaskBit(id)) == 0) {
        ++added;
        continue;
      }
      const uint32_t tag = EntryTag(chain[k], id);
      const size_t s =
          entry_slots.Find(tag, [tag](const EntrySlot& slot) { return slot.tag == tag; });
      if (s != kNoSlot && entry_slots[s].pos < ring.capacity()) {
        __builtin_prefetch(ring.hash_address(entry_slots[s].pos));
        hints[k] = s;
      }
    }
    // The ring's next live slots are the next victims: their hashes are read in order, and
    // their table slots prefetched a few evictions ahead of each (a miss costs more than the
    // work between two evictions).
    victims.clear();
    const int64_t evictions = backend.count + added - backend.bound;
    for (uint32_t i = 0; i < ring.size() && static_cast<int64_t>(victims.size()) < evictions; ++i) {
      if (const uint32_t pos = ring.Pos(i); ring.Live(pos)) victims.push_back(ring.hash(pos));
    }
    constexpr size_t kVictimsAhead = 8;
    size_t prefetched = std::min(victims.size(), kVictimsAhead);
    for (size_t v = 0; v < prefetched; ++v) Prefetch(victims[v], id);
    // Pass 2: use or add from the last block to the first, evicting as needed.
    for (size_t k = chain.size(); k-- > 0;) {
      const uint64_t hash = chain[k];
      if (Use(id, hash, hints[k])) continue;
      if (backend.count >= backend.bound) {
        if (prefetched < victims.size()) Prefetch(victims[prefetched++], id);
        EvictLeastRecent(id);
      }
      AddEntry(id, hash);
    }
  }
  std::vector<int32_t> Match(std::span<const uint64_t> chain) const {
    std::vector<int32_t> depth(backends.size(), 0);
    if (backends.empty() || size == 0) return depth;
    const size_t ahead = std::min(chain.size(), kPrefetchDistance);
    for (size_t i = 0; i < ahead; ++i) blocks.Prefetch(Mix32(chain[i]));
    if (backends.size() <= 64) {
      // Exact masks: `alive` is the set of backends holding every block so far.
      uint64_t alive = backends.size() == 64 ? ~uint64_t{0} : (uint64_t{1} << backends.size()) - 1;
      for (size_t i = 0; i < chain.size(); ++i) {
        if (i + ahead < chain.size()) blocks.Prefetch(Mix32(chain[i + ahead]));
        const size_t s = FindBlock(chain[i]);
        const uint64_t next = s == kNoSlot ? 0 : alive & blocks[s].mask;
        for (uint64_t dead = alive & ~next; dead != 0; dead &= dead - 1) {
          depth[std::countr_zero(dead)] = static_cast<int32_t>(i);
        }
        alive = next;
        if (alive == 0) return depth;
      }
      for (; alive != 0; alive &= alive - 1) {
        depth[std::countr_zero(alive)] = static_cast<int32_t>(chain.size());
      }
      return depth;
    }
    // Beyond 64 backends: `alive` lists the backends holding every block so far; the block mask
    // narrows each block's candidates to the alive backends of a set bit.
    std::vector<BackendId> alive;
    for (size_t i = 0; i < chain.size(); ++i) {
      if (i + ahead < chain.size()) blocks.Prefetch(Mix32(chain[i + ahead]));
      const size_t s = FindBlock(chain[i]);
      const uint64_t mask = s == kNoSlot ? 0 : blocks[s].mask;
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
      if (alive.empty()) return depth;
    }
    for (BackendId b : alive) depth[b] = static_cast<int32_t>(chain.size());
    return depth;
  }

  size_t MemoryBytes() const {
    size_t rings = 0;
    for (const BackendState& backend : backends) rings += backend.ring.allocated_bytes();
    return sizeof(Impl) + blocks.allocated_bytes() + entry_slots.allocated_bytes() +
           shared_bits.allocated_bytes() + backends.capacity() * sizeof(BackendState) +
           victims.capacity() * sizeof(uint64_t) + hints.capacity() * sizeof(size_t) + rings;
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
  return impl_->Match(chain);
}

void PrefixIndex::Insert(BackendId backend, std::span<const uint64_t> chain) {
  impl_->Insert(backend, chain);
}

void PrefixIndex::Truncate(BackendId backend, std::span<const uint64_t> chain, size_t keep_blocks) {
  if (backend >= impl_->backends.size()) return;
  for (size_t i = keep_blocks; i < chain.size(); ++i) impl_->RemoveHash(backend, chain[i]);
}

void PrefixIndex::Remove(BackendId backend, std::span<const uint64_t> hashes) {
  if (backend >= impl_->backends.size()) return;
  for (uint64_t hash : hashes) impl_->RemoveHash(backend, hash);
}

void PrefixIndex::Clear(BackendId backend) {
  if (backend >= impl_->backends.size()) return;
  while (impl_->backends[backend].count > 0) impl_->EvictLeastRecent(backend);
  impl_->backends[backend].ring = Ring();
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
