// Reads that tell Asio's reactor when a TCP socket is drained, so that the next read on it waits
// for data instead of first trying a recv that finds nothing.
//
// Why: Asio's epoll reactor starts every read with a speculative recv and waits for the socket's
// edge only when that fails. On the proxy's path both reads of a request fail that way: the
// client's next request is not there when the response has just been written, nor the engine's
// response when the request has just been sent. That was 1.8 failed recv calls per proxied
// request, each about 1.1 us on this VM (bench/syscall_cost.cc; docs/performance.md). Asio skips
// the attempt when the previous read left the socket "exhausted", which it concludes only from a
// zero-byte read (the peer's close). A short read is not enough to conclude it: a close that
// arrived with the data would then never be seen (its edge was spent on that data).
//
// How: the socket asks the kernel for TCP_INQ, and a read into a DrainHintBuffer is a recvmsg
// whose TCP_CM_INQ control message says how much is left after it; the kernel reports a pending
// close as 1. A read that leaves 0 tells the reactor the socket is exhausted; the next read on
// the socket (of any kind) is queued to wait for the edge that new data or a close brings. If
// TCP_INQ is not on (or the kernel gives no hint), a read is treated as not draining: Asio's own
// behaviour.
//
// Only for plain reads: message flags given with a DrainHintBuffer (peek, out-of-band) are not
// passed on.
//
// Usage (a plain TCP socket of an io_context, non-blocking is not needed):
//   EnableDrainHints(socket);                                     // once per connection
//   auto [ec, n] = co_await socket.async_read_some(DrainHintBuffer{buffer.prepare(size)}, token);
//   // or, for a stream that may be plain or TLS:
//   auto [ec, n] = co_await ReadSomeWithDrainHint(stream, buffer.prepare(size), token);
//
// It specialises an Asio implementation detail (the reactive recv operation's base for
// DrainHintBuffer), written against Boost 1.81, which CMakeLists.txt requires exactly.
//
// Thread-safety: as the socket.
#pragma once

#include <sys/types.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <boost/version.hpp>

// After the public headers: it needs their declarations (socket_base) without including them.
#include <boost/asio/detail/reactive_socket_recv_op.hpp>

static_assert(BOOST_VERSION == 108100,
              "drain_hint_read.h specialises an Asio detail of Boost 1.81: check it against "
              "boost/asio/detail/reactive_socket_recv_op.hpp before changing Boost");

namespace warmroute::net {

// One buffer to read into, as a mutable buffer sequence that selects the draining read.
struct DrainHintBuffer {
  boost::asio::mutable_buffer buffer;

  const boost::asio::mutable_buffer* begin() const { return &buffer; }
  const boost::asio::mutable_buffer* end() const { return &buffer + 1; }
};

// Asks the kernel for a TCP_CM_INQ hint with each read of `socket`. Returns false when it
// refused (reads then behave as plain reads).
bool EnableDrainHints(boost::asio::ip::tcp::socket::native_handle_type socket);

// Reads some of what `stream` receives into `into`, completing with `token`. A plain TCP stream
// (one with a socket(), such as Beast's basic_stream) is read on its socket, with a drain hint:
// Beast's stream layer would hide the hint, and callers guard these reads with a CoarseDeadline,
// not with that layer's timer. Any other stream (TLS) is read as it is.
template <typename Stream, typename Token>
auto ReadSomeWithDrainHint(Stream& stream, boost::asio::mutable_buffer into, Token token) {
  if constexpr (requires { stream.socket().native_handle(); }) {
    return stream.socket().async_read_some(DrainHintBuffer{into}, token);
  } else {
    return stream.async_read_some(into, token);
  }
}

namespace internal {
// One non-blocking recvmsg into `buffer`: not_done when nothing was there (EAGAIN), done with the
// bytes read (or the error, or eof), done_and_exhausted when the kernel says nothing is left,
// not even a close.
boost::asio::detail::reactor_op::status ReadWithDrainHint(int socket,
                                                          boost::asio::mutable_buffer buffer,
                                                          boost::system::error_code& ec,
                                                          size_t& bytes_transferred);
}  // namespace internal

}  // namespace warmroute::net

namespace boost::asio::detail {

// The recv operation's base for DrainHintBuffer (the operation itself, with its handler, is
// Asio's): its perform step is ReadWithDrainHint.
template <>
class reactive_socket_recv_op_base<warmroute::net::DrainHintBuffer> : public reactor_op {
 public:
  reactive_socket_recv_op_base(const boost::system::error_code& success_ec, socket_type socket,
                               socket_ops::state_type /*state*/,
                               const warmroute::net::DrainHintBuffer& buffers,
                               socket_base::message_flags /*flags*/, func_type complete_func)
      : reactor_op(success_ec, &reactive_socket_recv_op_base::do_perform, complete_func),
        socket_(socket),
        buffer_(buffers.buffer) {}

  static status do_perform(reactor_op* base) {
    auto* o = static_cast<reactive_socket_recv_op_base*>(base);
    return warmroute::net::internal::ReadWithDrainHint(o->socket_, o->buffer_, o->ec_,
                                                       o->bytes_transferred_);
  }

 private:
  socket_type socket_;
  boost::asio::mutable_buffer buffer_;
};

}  // namespace boost::asio::detail
