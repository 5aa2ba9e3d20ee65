// Decodes one KV-event message of a vLLM or SGLang engine into a plain batch.
//
// A message is three ZMQ frames: topic, sequence number (8 bytes, big-endian), msgpack payload.
// DecodeSequence reads frame 2; DecodeEventBatch reads frame 3. The payload shapes accepted, from
// the publishers' sources (msgspec structs with tag=True and omit_defaults=True):
//
//   Batch. vllm-project/vllm vllm/distributed/kv_events.py `EventBatch` (ts: float, events: list,
//     data_parallel_rank: int | None = None). Current vLLM declares it without array_like, so it
//     is a map {"ts", "events", "data_parallel_rank"?}; older vLLM, the emulator
//     (src/emulator/kv_event_publisher.h) and SGLang (sgl-project/sglang
//     python/sglang/srt/disaggregation/kv_events.py: array_like, third field attn_dp_rank) send
//     the array [ts, events, rank?]. Both are accepted.
//   Events, array form (vLLM up to v0.23, every SGLang): the tag first, then the fields in
//     declaration order, trailing defaults omitted:
//       ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id?,
//        medium?, lora_name? | metadata?, extra_keys?, group_idx?, kv_cache_spec_kind?, ...]
//       ["BlockRemoved", block_hashes, medium?, group_idx?]
//       ["AllBlocksCleared"]
//     SGLang's BlockStored ends at lora_id (older) or medium (current); a revision of SGLang
//     seen in the wild appends a metadata map {"cache_salt": str} where vLLM has lora_name: a
//     map in that position is read for its cache_salt.
//   Events, map form (current vLLM): {"type": tag, field: value, ...}; unknown keys are skipped
//     (kv_cache_spec_sliding_window and whatever comes next), and a "cache_salt" key is read.
//
// Field types accepted, and why:
//   block hashes (block_hashes, parent_block_hash): vLLM's ExternalBlockHash is `bytes | int`:
//     an unsigned int (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1, the default: the digest's low 64
//     bits), or the digest as bytes, reduced here the way vLLM reduces it to an int
//     (int.from_bytes(digest, "big") & (2**64 - 1): its last 8 bytes, big-endian). SGLang sends
//     signed int64 (hash_str_to_int64), read as the same 64 bits unsigned. An engine hash is an
//     opaque name here (block_index_writer.h keys the index by its own hash), so only its
//     consistency across events matters.
//   token_ids: integers in [0, 2^31). SGLang's EAGLE bigram pages (pairs) are rejected.
//   block_size in [1, kMaxBlockSize]; token_ids.size() == block_hashes.size() * block_size.
//   medium: a string or nil. "GPU"; "CPU" (vLLM's offloading) and "CPU_PINNED" (SGLang's host
//     tier) are kCpu; "DISK"; anything else kOther; nil or absent kUnspecified (the GPU).
//   lora_id: int or nil; lora_name: str or nil; group_idx: int or nil.
//   extra_keys: nil, or one entry per block, each nil or an array (vLLM's tuple of LoRA name,
//     multimodal keys, cache_salt on the first block, prompt-embedding hashes). Only the first
//     block's entry is kept: its top-level strings (block_index_writer.h reads a salt from them).
//
// Malformed input returns InvalidArgument naming the problem (and the event's index); decoding
// never reads outside the payload, never recurses deeper than kMaxDepth, and allocates at most
// in proportion to the payload (every declared element takes at least one byte, and the payload
// is checked whole before anything is decoded).
//
// Usage:
//   EventBatch batch;                                  // reused: decoding allocates only to grow
//   absl::StatusOr<uint64_t> seq = DecodeSequence(frames[1]);
//   absl::Status s = DecodeEventBatch(frames[2], batch);
//   for (const Event& e : batch.events) { batch.hashes(e); batch.tokens(e); ... }
//
// Lifetime: string_views in a batch (lora_name, cache_salt, first-block strings) point into the
// payload, which must outlive their use.
//
// Thread-safety: pure functions; a batch is a plain value.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace warmroute::kv_events {

enum class EventKind : uint8_t { kBlockStored, kBlockRemoved, kAllBlocksCleared };

// The storage tier an event is about.
enum class Medium : uint8_t { kUnspecified, kGpu, kCpu, kDisk, kOther };

inline constexpr int kMaxBlockSize = 1 << 16;
inline constexpr int kMaxDepth = 16;  // nesting of msgpack containers in one payload

struct Event {
  EventKind kind = EventKind::kBlockStored;
  Medium medium = Medium::kUnspecified;
  bool has_parent = false;  // BlockStored: parent_block_hash is not nil
  uint64_t parent_hash = 0;
  // Ranges of EventBatch::block_hashes / token_ids / first_block_strings.
  uint32_t hashes_begin = 0, hashes_count = 0;
  uint32_t tokens_begin = 0, tokens_count = 0;
  uint32_t strings_begin = 0, strings_count = 0;
  int32_t block_size = 0;                // BlockStored
  std::optional<int64_t> lora_id;        // BlockStored
  std::optional<std::string_view> lora_name;
  std::optional<std::string_view> cache_salt;  // SGLang metadata or a map's "cache_salt"
  std::optional<int64_t> group_idx;
  // extra_keys: absent (or nil) / present with the first block's entry nil / with an array whose
  // top-level strings are first_block_strings.
  enum class ExtraKeys : uint8_t { kAbsent, kFirstNil, kFirstTuple };
  ExtraKeys extra_keys = ExtraKeys::kAbsent;
};

struct EventBatch {
  double ts = 0;
  std::optional<int64_t> dp_rank;
  std::vector<Event> events;
  std::vector<uint64_t> block_hashes;
  std::vector<int32_t> token_ids;
  std::vector<std::string_view> first_block_strings;

  std::span<const uint64_t> hashes(const Event& e) const {
    return std::span<const uint64_t>(block_hashes).subspan(e.hashes_begin, e.hashes_count);
  }
  std::span<const int32_t> tokens(const Event& e) const {
    return std::span<const int32_t>(token_ids).subspan(e.tokens_begin, e.tokens_count);
  }
  std::span<const std::string_view> strings(const Event& e) const {
    return std::span<const std::string_view>(first_block_strings)
        .subspan(e.strings_begin, e.strings_count);
  }
  void clear();
};

// Frame 2: exactly 8 bytes, big-endian. vLLM's replay stream ends with the 8 bytes of -1
// (ZmqEventPublisher.END_SEQ), which reads as kEndOfReplay.
inline constexpr uint64_t kEndOfReplay = ~uint64_t{0};
absl::StatusOr<uint64_t> DecodeSequence(std::string_view frame);

// Frame 3 into `out` (cleared first; its vectors keep their capacity). On error `out` holds
// whatever was decoded before the problem: use it only after OK.
absl::Status DecodeEventBatch(std::string_view payload, EventBatch& out);

// The 64-bit name of a block hash given as bytes (vLLM's int reduction: the last 8 bytes,
// big-endian; fewer bytes are read whole).
uint64_t BlockHashFromBytes(std::string_view bytes);

}  // namespace warmroute::kv_events
