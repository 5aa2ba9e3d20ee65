// vLLM's KV-event wire format, and a ZMQ PUB socket that sends it.
//
// One message per scheduler step that produced events, three frames:
//   1. topic (bytes; vLLM's default is empty)
//   2. sequence number: 8 bytes, big-endian, from 0, +1 per message
//   3. msgpack payload: [ts, [event, ...], data_parallel_rank] (the rank left out when unknown)
// Events are msgspec tagged structs (omit_defaults), block hashes msgpack unsigned ints (vLLM's
// int form of ExternalBlockHash), medium "GPU". Two encodings:
//   kArray: array_like, vLLM up to v0.23 — an array whose first element is the tag:
//     ["BlockStored", block_hashes, parent_block_hash|nil, token_ids, block_size, lora_id|nil,
//      medium, lora_name|nil]
//     ["BlockRemoved", block_hashes, medium]
//     ["AllBlocksCleared"]
//   kMap: vLLM's current form (vllm-project/vllm#42892) — {"type": tag, field: value, ...} with
//     the same fields plus, for BlockStored, extra_keys (nil per block), group_idx (0) and
//     kv_cache_spec_kind ("full_attention"), and for BlockRemoved group_idx (0).
// The outer batch is an array in both.
//
// Usage:
//   auto pub = KvEventPublisher::Create(ctx, "tcp://*:5557", "", KvEventEncoding::kArray);
//   (*pub)->Publish(now_seconds, out.kv_events);
//
// Thread-safety: a publisher is used by one thread at a time (ZMQ sockets are not thread-safe).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/engine/kv_event.h"

namespace zmq {
class context_t;
class socket_t;
}  // namespace zmq

namespace warmroute::emulator {

enum class KvEventEncoding { kArray, kMap };

// The msgpack payload of one batch (frame 3). Pure; unit-testable.
std::string EncodeKvEventBatch(double ts, std::span<const engine::KvEvent> events,
                               std::optional<int> data_parallel_rank, KvEventEncoding encoding);

class KvEventPublisher {
 public:
  // Binds a PUB socket to `endpoint` (e.g. "tcp://*:5557"). Unavailable if it cannot bind.
  static absl::StatusOr<std::unique_ptr<KvEventPublisher>> Create(zmq::context_t& context,
                                                                  const std::string& endpoint,
                                                                  std::string topic,
                                                                  KvEventEncoding encoding);
  ~KvEventPublisher();
  KvEventPublisher(const KvEventPublisher&) = delete;
  KvEventPublisher& operator=(const KvEventPublisher&) = delete;

  // Sends one message with all of `events`; does nothing when `events` is empty. Never blocks.
  void Publish(double ts, std::span<const engine::KvEvent> events);

  // The endpoint actually bound (with the real port when bound to port 0 or "*").
  std::string endpoint() const;

 private:
  KvEventPublisher(std::unique_ptr<zmq::socket_t> socket, std::string topic,
                   KvEventEncoding encoding);
  std::unique_ptr<zmq::socket_t> socket_;
  std::string topic_;
  KvEventEncoding encoding_;
  uint64_t sequence_ = 0;
};

}  // namespace warmroute::emulator
