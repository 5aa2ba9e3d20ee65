// The ZMQ ROUTER socket of vLLM's KV-event replay endpoint, served on an asio executor from a
// KvEventReplayBuffer (the protocol is in emulator/kv_event_replay.h).
//
// vLLM polls its ROUTER from the publisher thread between publishes; here the ROUTER's ZMQ_FD is
// watched by the replica's io_context, so a request is answered on the thread that publishes,
// and the buffer needs no lock. ZMQ_FD only signals that ZMQ_EVENTS may have changed, so every
// wake-up drains all pending requests before waiting again.
//
// Like vLLM, the ROUTER keeps ZMQ's default send high-water mark (1000 messages per client) and
// no ZMQ_ROUTER_MANDATORY: a reply burst larger than what the client's pipe holds is dropped
// past the mark, which the client sees as a gap in the replayed sequences.
//
// Usage (on the executor's thread):
//   auto server = KvEventReplayServer::Create(ctx, io.get_executor(), "tcp://*:5558", buffer);
//   ... requests are answered while the io_context runs ...
//   (*server)->Stop();  // before the io_context can run out of work
//
// Thread-safety: every method on the executor's thread. `buffer` must outlive the server.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "emulator/kv_event_replay.h"
#include "net/task.h"

namespace zmq {
class context_t;
}  // namespace zmq

namespace warmroute::emulator {

class KvEventReplayServer {
 public:
  // Binds a ROUTER socket to `endpoint` and starts serving. Unavailable if it cannot bind.
  static absl::StatusOr<std::unique_ptr<KvEventReplayServer>> Create(
      zmq::context_t& context, net::Executor executor, const std::string& endpoint,
      const KvEventReplayBuffer& buffer);
  ~KvEventReplayServer();
  KvEventReplayServer(const KvEventReplayServer&) = delete;
  KvEventReplayServer& operator=(const KvEventReplayServer&) = delete;

  // Stops answering (pending requests are dropped). Idempotent.
  void Stop();

  // The endpoint actually bound (with the real port when bound to port "*").
  std::string endpoint() const;

 private:
  class Impl;
  explicit KvEventReplayServer(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace warmroute::emulator
