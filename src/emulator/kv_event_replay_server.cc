#include "emulator/kv_event_replay_server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <string_view>
#include <utility>
#include <vector>
#include <zmq.hpp>

namespace warmroute::emulator {

namespace asio = boost::asio;

class KvEventReplayServer::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(net::Executor executor, zmq::socket_t socket, const KvEventReplayBuffer& buffer)
      : socket_(std::move(socket)), fd_(executor, socket_.get(zmq::sockopt::fd)), buffer_(buffer) {}

  // Answers every pending request, then waits for ZMQ_FD to signal.
  void Serve() {
    try {
      while (!stopped_ && (socket_.get(zmq::sockopt::events) & ZMQ_POLLIN) != 0) {
        std::vector<zmq::message_t> frames;
        if (!ReceiveMessage(frames)) break;
        Answer(frames);
      }
    } catch (const zmq::error_t& e) {
      spdlog::warn("kv-events replay on {}: {}", endpoint(), e.what());
    }
    if (stopped_) return;
    fd_.async_wait(asio::posix::descriptor_base::wait_read,
                   [self = shared_from_this()](const boost::system::error_code& ec) {
                     if (!ec && !self->stopped_) self->Serve();
                   });
  }

  void Stop() {
    if (stopped_) return;
    stopped_ = true;
    // The descriptor is ZMQ's: release it (cancelling the wait) instead of closing it, then
    // close the socket now, so the zmq context can terminate even if the cancelled wait's
    // handler, which holds this object, never runs.
    fd_.release();
    socket_.close();
  }

  std::string endpoint() const {
    return stopped_ ? std::string() : socket_.get(zmq::sockopt::last_endpoint);
  }

 private:
  // One whole multipart message, without waiting; false when none is pending.
  bool ReceiveMessage(std::vector<zmq::message_t>& frames) {
    do {
      zmq::message_t frame;
      if (!socket_.recv(frame, zmq::recv_flags::dontwait)) return !frames.empty();
      frames.push_back(std::move(frame));
    } while (frames.back().more());
    return true;
  }

  void Answer(const std::vector<zmq::message_t>& frames) {
    std::vector<std::string_view> views;
    views.reserve(frames.size());
    for (const zmq::message_t& f : frames) views.push_back(f.to_string_view());
    const std::optional<uint64_t> start = ParseReplayRequest(views);
    if (!start) {
      // vLLM: logger.warning("Invalid replay request: %s", frame), and no answer.
      spdlog::warn("kv-events replay: invalid request of {} frames (want identity, empty, start)",
                   frames.size());
      return;
    }
    const auto more = zmq::send_flags::sndmore | zmq::send_flags::dontwait;
    for (const ReplayMessage& m : buffer_.Answer(*start)) {
      socket_.send(zmq::buffer(views[0]), more);
      socket_.send(zmq::const_buffer(nullptr, 0), more);
      socket_.send(zmq::buffer(m.sequence), more);
      socket_.send(zmq::buffer(m.payload), zmq::send_flags::dontwait);
    }
  }

  zmq::socket_t socket_;
  asio::posix::basic_stream_descriptor<net::Executor> fd_;
  const KvEventReplayBuffer& buffer_;
  bool stopped_ = false;
};

absl::StatusOr<std::unique_ptr<KvEventReplayServer>> KvEventReplayServer::Create(
    zmq::context_t& context, net::Executor executor, const std::string& endpoint,
    const KvEventReplayBuffer& buffer) {
  try {
    zmq::socket_t socket(context, zmq::socket_type::router);
    socket.set(zmq::sockopt::linger, 0);
    socket.bind(endpoint);
    auto impl = std::make_shared<Impl>(executor, std::move(socket), buffer);
    impl->Serve();
    return std::unique_ptr<KvEventReplayServer>(new KvEventReplayServer(std::move(impl)));
  } catch (const zmq::error_t& e) {
    return absl::UnavailableError("cannot bind the KV-event replay endpoint " + endpoint + ": " +
                                  e.what());
  }
}

KvEventReplayServer::KvEventReplayServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

KvEventReplayServer::~KvEventReplayServer() { impl_->Stop(); }

void KvEventReplayServer::Stop() { impl_->Stop(); }

std::string KvEventReplayServer::endpoint() const { return impl_->endpoint(); }

}  // namespace warmroute::emulator
