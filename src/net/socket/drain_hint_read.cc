#include "net/socket/drain_hint_read.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <boost/asio/error.hpp>
#include <cerrno>
#include <cstring>

namespace warmroute::net {

bool EnableDrainHints(boost::asio::ip::tcp::socket::native_handle_type socket) {
  const int on = 1;
  return setsockopt(socket, IPPROTO_TCP, TCP_INQ, &on, sizeof(on)) == 0;
}

namespace internal {

boost::asio::detail::reactor_op::status ReadWithDrainHint(int socket,
                                                          boost::asio::mutable_buffer buffer,
                                                          boost::system::error_code& ec,
                                                          size_t& bytes_transferred) {
  using Op = boost::asio::detail::reactor_op;
  iovec iov{.iov_base = buffer.data(), .iov_len = buffer.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = ::recvmsg(socket, &message, 0);
  } while (n < 0 && errno == EINTR);
  bytes_transferred = 0;
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Op::not_done;
    ec = boost::system::error_code(errno, boost::asio::error::get_system_category());
    return Op::done;
  }
  ec = boost::system::error_code();
  bytes_transferred = static_cast<size_t>(n);
  if (n == 0) {
    if (buffer.size() == 0) return Op::done;
    ec = boost::asio::error::eof;  // as Asio's own read: the peer closed
    return Op::done_and_exhausted;
  }
  int left = 1;  // no hint: not known to be drained
  for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
    if (c->cmsg_level == SOL_TCP && c->cmsg_type == TCP_CM_INQ) {
      std::memcpy(&left, CMSG_DATA(c), sizeof(left));
    }
  }
  return left == 0 ? Op::done_and_exhausted : Op::done;
}

}  // namespace internal
}  // namespace warmroute::net
