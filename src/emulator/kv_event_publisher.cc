#include "emulator/kv_event_publisher.h"

#include <msgpuck.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "absl/status/status.h"
#include "common/status.h"
#include "emulator/kv_event_replay_server.h"

namespace warmroute::emulator {
namespace {

// The wire schema, field by field, as vllm/distributed/kv_events.py declares it:
//
//   class BlockStored(KVCacheEvent):            class BlockRemoved(KVCacheEvent):
//       block_hashes: list[ExternalBlockHash]       block_hashes: list[ExternalBlockHash]
//       parent_block_hash: ExternalBlockHash|None   medium: str | None
//       token_ids: list[int]                        group_idx: int | None = None
//       block_size: int
//       lora_id: int | None                     class AllBlocksCleared(KVCacheEvent): pass
//       medium: str | None
//       lora_name: str | None
//       extra_keys: list[tuple | None] | None = None
//       group_idx: int | None = None
//       kv_cache_spec_kind: str | None = None
//       kv_cache_spec_sliding_window: int | None = None
//
// ExternalBlockHash is `bytes | int`; vLLM sends ints by default
// (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1: the low 64 bits of the block digest), and so do we:
// our block hashes are 64-bit, encoded as msgpack unsigned integers.
//
// The structs are msgspec tagged structs with omit_defaults, so a field is left out only when
// it has a default and holds it; fields without a default (lora_id, medium, lora_name) are
// always present, nil or not.
//   kArray: `array_like=True` (vLLM up to v0.23): the tag first, then the fields in declaration
//     order. We stop after lora_name: every later field holds its default (None), and
//     omit_defaults drops trailing defaults of an array.
//   kMap: vLLM's current form (vllm-project/vllm#42892): {"type": tag, field: value, ...}, with
//     the fields a single full-attention KV cache group reports (as captured from vLLM 0.26):
//     extra_keys one nil per block, group_idx 0, kv_cache_spec_kind "full_attention".
// The outer EventBatch stays array_like in both: [ts, events, data_parallel_rank], the rank
// omitted (a trailing default) when unknown.
constexpr std::string_view kMediumGpu = "GPU";
constexpr std::string_view kFullAttention = "full_attention";

// Appends msgpack values to a string. msgpuck encoders write at most 9 bytes for a scalar
// header, so each call encodes into a small stack buffer first.
class MsgpackWriter {
 public:
  explicit MsgpackWriter(std::string* out) : out_(out) {}

  void Array(uint32_t size) { Append(mp_encode_array(buf_.data(), size)); }
  void Map(uint32_t size) { Append(mp_encode_map(buf_.data(), size)); }
  void Nil() { Append(mp_encode_nil(buf_.data())); }
  void Double(double value) { Append(mp_encode_double(buf_.data(), value)); }
  void Uint(uint64_t value) { Append(mp_encode_uint(buf_.data(), value)); }
  void Int(int64_t value) {
    Append(value >= 0 ? mp_encode_uint(buf_.data(), static_cast<uint64_t>(value))
                      : mp_encode_int(buf_.data(), value));
  }
  void Str(std::string_view value) {
    Append(mp_encode_strl(buf_.data(), static_cast<uint32_t>(value.size())));
    out_->append(value.data(), value.size());
  }
  void UintArray(const std::vector<uint64_t>& values) {
    Array(static_cast<uint32_t>(values.size()));
    for (uint64_t v : values) Uint(v);
  }
  void IntArray(const std::vector<int32_t>& values) {
    Array(static_cast<uint32_t>(values.size()));
    for (int32_t v : values) Int(v);
  }
  void OptionalUint(const std::optional<uint64_t>& value) {
    if (value.has_value()) {
      Uint(*value);
    } else {
      Nil();
    }
  }

 private:
  void Append(const char* end) { out_->append(buf_.data(), end - buf_.data()); }

  std::string* out_;
  std::array<char, 16> buf_{};
};

// The array_like forms: vLLM's (up to v0.23) and SGLang's, which is vLLM's without medium and
// lora_name (`vllm_fields` false).
void EncodeArrayEvent(const engine::KvEvent& event, bool vllm_fields, MsgpackWriter& w) {
  switch (event.kind) {
    case engine::KvEvent::Kind::kBlockStored:
      w.Array(vllm_fields ? 8 : 6);
      w.Str("BlockStored");
      w.UintArray(event.block_hashes);
      w.OptionalUint(event.parent_block_hash);
      w.IntArray(event.token_ids);
      w.Int(event.block_size);
      w.Nil();  // lora_id
      if (vllm_fields) {
        w.Str(kMediumGpu);
        w.Nil();  // lora_name
      }
      return;
    case engine::KvEvent::Kind::kBlockRemoved:
      w.Array(vllm_fields ? 3 : 2);
      w.Str("BlockRemoved");
      w.UintArray(event.block_hashes);
      if (vllm_fields) w.Str(kMediumGpu);
      return;
    case engine::KvEvent::Kind::kAllBlocksCleared:
      w.Array(1);
      w.Str("AllBlocksCleared");
      return;
  }
}

void EncodeMapEvent(const engine::KvEvent& event, MsgpackWriter& w) {
  switch (event.kind) {
    case engine::KvEvent::Kind::kBlockStored:
      w.Map(11);
      w.Str("type");
      w.Str("BlockStored");
      w.Str("block_hashes");
      w.UintArray(event.block_hashes);
      w.Str("parent_block_hash");
      w.OptionalUint(event.parent_block_hash);
      w.Str("token_ids");
      w.IntArray(event.token_ids);
      w.Str("block_size");
      w.Int(event.block_size);
      w.Str("lora_id");
      w.Nil();
      w.Str("medium");
      w.Str(kMediumGpu);
      w.Str("lora_name");
      w.Nil();
      w.Str("extra_keys");
      w.Array(static_cast<uint32_t>(event.block_hashes.size()));
      for (size_t i = 0; i < event.block_hashes.size(); ++i) w.Nil();
      w.Str("group_idx");
      w.Int(0);
      w.Str("kv_cache_spec_kind");
      w.Str(kFullAttention);
      return;
    case engine::KvEvent::Kind::kBlockRemoved:
      w.Map(4);
      w.Str("type");
      w.Str("BlockRemoved");
      w.Str("block_hashes");
      w.UintArray(event.block_hashes);
      w.Str("medium");
      w.Str(kMediumGpu);
      w.Str("group_idx");
      w.Int(0);
      return;
    case engine::KvEvent::Kind::kAllBlocksCleared:
      w.Map(1);
      w.Str("type");
      w.Str("AllBlocksCleared");
      return;
  }
}

// vLLM's default PUB high-water mark (ZmqEventPublisher(hwm=100_000)): messages beyond it are
// dropped for a slow subscriber, which then sees a gap in the sequence numbers.
constexpr int kSendHighWaterMark = 100'000;

}  // namespace

std::string EncodeKvEventBatch(double ts, std::span<const engine::KvEvent> events,
                               std::optional<int> data_parallel_rank, KvEventEncoding encoding) {
  std::string out;
  out.reserve(64 + events.size() * 64);
  MsgpackWriter w(&out);
  w.Array(data_parallel_rank.has_value() ? 3 : 2);
  w.Double(ts);
  w.Array(static_cast<uint32_t>(events.size()));
  for (const engine::KvEvent& event : events) {
    switch (encoding) {
      case KvEventEncoding::kMap:
        EncodeMapEvent(event, w);
        break;
      case KvEventEncoding::kSglang:
        EncodeArrayEvent(event, /*vllm_fields=*/false, w);
        break;
      case KvEventEncoding::kArray:
        EncodeArrayEvent(event, /*vllm_fields=*/true, w);
        break;
    }
  }
  if (data_parallel_rank.has_value()) w.Int(*data_parallel_rank);
  return out;
}

absl::StatusOr<std::unique_ptr<KvEventPublisher>> KvEventPublisher::Create(
    zmq::context_t& context, net::Executor executor, const KvEventPublisherOptions& options) {
  std::unique_ptr<KvEventPublisher> publisher;
  try {
    auto socket = std::make_unique<zmq::socket_t>(context, zmq::socket_type::pub);
    socket->set(zmq::sockopt::sndhwm, options.hwm);
    socket->set(zmq::sockopt::linger, 0);
    socket->bind(options.endpoint);
    publisher.reset(new KvEventPublisher(std::move(socket), options));
  } catch (const zmq::error_t& e) {
    return absl::UnavailableError("cannot bind the KV-event publisher to " + options.endpoint +
                                  ": " + e.what());
  }
  if (!options.replay_endpoint.empty()) {
    WR_ASSIGN_OR_RETURN(publisher->replay_,
                        KvEventReplayServer::Create(context, executor, options.replay_endpoint,
                                                    publisher->replay_buffer_));
  }
  return publisher;
}

KvEventPublisher::KvEventPublisher(std::unique_ptr<zmq::socket_t> socket,
                                   const KvEventPublisherOptions& options)
    : socket_(std::move(socket)),
      topic_(options.topic),
      encoding_(options.encoding),
      drop_every_(options.drop_every),
      replay_buffer_(options.replay_endpoint.empty() ? 0 : options.buffer_steps) {}

KvEventPublisher::~KvEventPublisher() = default;

void KvEventPublisher::Stop() {
  if (replay_) replay_->Stop();
}

void KvEventPublisher::Publish(double ts, std::span<const engine::KvEvent> events) {
  if (events.empty()) return;
  std::string payload = EncodeKvEventBatch(ts, events, /*data_parallel_rank=*/0, encoding_);
  const SequenceFrame seq = EncodeSequence(sequence_);
  // Every batch consumes a sequence number and enters the replay buffer, delivered or not, so
  // that a subscriber can tell a dropped message (high-water mark, no connection yet) from a
  // quiet engine, and fetch it again.
  const uint64_t sequence = sequence_++;
  const bool dropped = drop_every_ > 0 && sequence % static_cast<uint64_t>(drop_every_) ==
                                              static_cast<uint64_t>(drop_every_ - 1);
  if (!dropped) {
    try {
      const auto more = zmq::send_flags::sndmore | zmq::send_flags::dontwait;
      if (socket_->send(zmq::buffer(topic_), more) && socket_->send(zmq::buffer(seq), more)) {
        socket_->send(zmq::buffer(payload), zmq::send_flags::dontwait);
      }
    } catch (const zmq::error_t&) {
      // A PUB socket drops instead of failing; an error here means the context is shutting
      // down. KV events are best effort (subscribers detect the gap by sequence number), so the
      // engine goes on.
    }
  }
  replay_buffer_.Append(sequence, std::move(payload));
}

std::string KvEventPublisher::endpoint() const { return socket_->get(zmq::sockopt::last_endpoint); }

std::string KvEventPublisher::replay_endpoint() const {
  return replay_ ? replay_->endpoint() : std::string();
}

}  // namespace warmroute::emulator
