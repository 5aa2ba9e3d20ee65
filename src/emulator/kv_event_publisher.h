// A ZMQ PUB socket that sends KV events in vLLM's wire format (the encodings:
// core/kv_events/event_encoder.h).
//
// One message per scheduler step that produced events, three frames:
//   1. topic (bytes; vLLM's default is empty)
//   2. sequence number: 8 bytes, big-endian, from 0, +1 per message
//   3. msgpack payload: kv_events::EncodeKvEventBatch with the configured encoding and the
//      publisher's data-parallel rank (0 unless the engine runs several ranks).
//
// With a replay endpoint, every published message is also kept in a KvEventReplayBuffer of the
// last `buffer_steps` messages and served on a ROUTER socket, as vLLM's ZmqEventPublisher does
// (emulator/kv_event_replay.h has the protocol). Without one no buffer is kept (vLLM keeps it
// regardless; nobody could read it).
//
// Sequence numbers start at 0 with each publisher, as vLLM's do (`itertools.count()` per
// publisher): a restarted engine starts again from 0, and its replay buffer starts empty.
//
// Usage:
//   KvEventPublisherOptions options{.endpoint = "tcp://*:5557", .replay_endpoint = "tcp://*:5558"};
//   auto pub = KvEventPublisher::Create(ctx, io.get_executor(), options);
//   (*pub)->Publish(now_seconds, out.kv_events);
//   (*pub)->Stop();  // before the io_context should run out of work (the replay socket waits)
//
// Thread-safety: a publisher is used on its executor's thread only (ZMQ sockets are not
// thread-safe, and the replay socket is served there).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/engine/kv_event.h"
#include "core/kv_events/event_encoder.h"
#include "emulator/kv_event_replay.h"
#include "net/task.h"

namespace zmq {
class context_t;
class socket_t;
}  // namespace zmq

namespace warmroute::emulator {

// The encoder moved to the core (the simulator publishes the same bytes); the emulator's names
// stay.
using kv_events::EncodeKvEventBatch;
using kv_events::KvEventEncoding;

class KvEventReplayServer;

// vLLM's KVEventsConfig fields that shape one publisher (vllm/config/kv_events.py).
struct KvEventPublisherOptions {
  std::string endpoint = "tcp://*:5557";  // PUB socket, bound
  std::string replay_endpoint;            // ROUTER socket, bound; empty: no replay
  std::string topic;                      // frame 1 of every message
  KvEventEncoding encoding = KvEventEncoding::kMap;
  size_t buffer_steps = 10'000;  // messages kept for replay
  int hwm = 100'000;             // PUB send high-water mark; 0: none
  // Test-only (`--kv-events-drop-every N`): every Nth message (sequence numbers N-1, 2N-1, ...)
  // is numbered and kept for replay but not sent, as a PUB socket past its high-water mark
  // drops it, so that a subscriber's gap repair can be tested for real. 0: none.
  int drop_every = 0;
  // The engine core's data-parallel rank, put in every batch (vLLM's KVEventBatch
  // data_parallel_rank: the map encoding's field, the array encoding's third element).
  int data_parallel_rank = 0;
};

class KvEventPublisher {
 public:
  // Binds a PUB socket to options.endpoint and, with options.replay_endpoint, a ROUTER socket
  // served on `executor`. Unavailable if either cannot bind.
  static absl::StatusOr<std::unique_ptr<KvEventPublisher>> Create(
      zmq::context_t& context, net::Executor executor, const KvEventPublisherOptions& options);
  ~KvEventPublisher();
  KvEventPublisher(const KvEventPublisher&) = delete;
  KvEventPublisher& operator=(const KvEventPublisher&) = delete;

  // Sends one message with all of `events`; does nothing when `events` is empty. Never blocks.
  void Publish(double ts, std::span<const engine::KvEvent> events);

  // Stops serving replay requests. Idempotent.
  void Stop();

  // The endpoints actually bound (with the real port when bound to port "*"); the replay
  // endpoint is empty without replay.
  std::string endpoint() const;
  std::string replay_endpoint() const;

 private:
  KvEventPublisher(std::unique_ptr<zmq::socket_t> socket, const KvEventPublisherOptions& options);
  std::unique_ptr<zmq::socket_t> socket_;
  std::string topic_;
  KvEventEncoding encoding_;
  int drop_every_ = 0;
  int data_parallel_rank_ = 0;
  uint64_t sequence_ = 0;
  KvEventReplayBuffer replay_buffer_;
  std::unique_ptr<KvEventReplayServer> replay_;  // null without replay
};

}  // namespace warmroute::emulator
