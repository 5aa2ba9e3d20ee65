#include "emulator/kv_event_publisher.h"

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

// vLLM's default PUB high-water mark (ZmqEventPublisher(hwm=100_000)): messages beyond it are
// dropped for a slow subscriber, which then sees a gap in the sequence numbers.
constexpr int kSendHighWaterMark = 100'000;

}  // namespace

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
      data_parallel_rank_(options.data_parallel_rank),
      replay_buffer_(options.replay_endpoint.empty() ? 0 : options.buffer_steps) {}

KvEventPublisher::~KvEventPublisher() = default;

void KvEventPublisher::Stop() {
  if (replay_) replay_->Stop();
}

void KvEventPublisher::Publish(double ts, std::span<const engine::KvEvent> events) {
  if (events.empty()) return;
  std::string payload = EncodeKvEventBatch(ts, events, data_parallel_rank_, encoding_);
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
