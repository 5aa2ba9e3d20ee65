#include "net/socket/drain_hint_read.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <optional>
#include <string>

#include "gtest/gtest.h"

namespace warmroute::net {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Status = asio::detail::reactor_op::status;

// A loopback connection: `client` writes, `server` reads with drain hints on.
struct Connection {
  asio::io_context io;
  tcp::socket client{io};
  tcp::socket server{io};

  Connection() {
    tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    client.connect(acceptor.local_endpoint());
    acceptor.accept(server);
    server.non_blocking(true);
    EXPECT_TRUE(EnableDrainHints(server.native_handle()));
  }

  void Send(std::string_view data) { asio::write(client, asio::buffer(data.data(), data.size())); }

  // Waits (up to a second) until the server socket is readable, so that a read sees what the
  // client sent.
  void AwaitReadable() {
    pollfd p{.fd = server.native_handle(), .events = POLLIN, .revents = 0};
    ASSERT_EQ(poll(&p, 1, 1000), 1);
  }

  Status Read(char* into, size_t size, boost::system::error_code& ec, size_t& n) {
    return internal::ReadWithDrainHint(server.native_handle(), asio::buffer(into, size), ec, n);
  }
};

TEST(DrainHintReadTest, ReportsWhenNothingIsLeft) {
  Connection c;
  std::array<char, 64> buffer{};
  boost::system::error_code ec;
  size_t n = 0;
  EXPECT_EQ(c.Read(buffer.data(), buffer.size(), ec, n), Status::not_done);  // nothing yet

  c.Send("hello");
  c.AwaitReadable();
  EXPECT_EQ(c.Read(buffer.data(), buffer.size(), ec, n), Status::done_and_exhausted);
  EXPECT_FALSE(ec);
  EXPECT_EQ(std::string(buffer.data(), n), "hello");

  c.Send("0123456789");  // more than the read takes: not drained
  c.AwaitReadable();
  EXPECT_EQ(c.Read(buffer.data(), 4, ec, n), Status::done);
  EXPECT_EQ(std::string(buffer.data(), n), "0123");
  EXPECT_EQ(c.Read(buffer.data(), buffer.size(), ec, n), Status::done_and_exhausted);
  EXPECT_EQ(std::string(buffer.data(), n), "456789");
}

// The case a short read cannot tell: data and the peer's close arrived together. The read that
// takes the data must not call the socket drained, or the close would wait for an edge that
// already came.
TEST(DrainHintReadTest, PendingCloseIsNotDrained) {
  Connection c;
  c.Send("last words");
  c.client.shutdown(tcp::socket::shutdown_send);
  c.AwaitReadable();
  std::array<char, 64> buffer{};
  boost::system::error_code ec;
  size_t n = 0;
  EXPECT_EQ(c.Read(buffer.data(), buffer.size(), ec, n), Status::done);
  EXPECT_EQ(std::string(buffer.data(), n), "last words");
  EXPECT_EQ(c.Read(buffer.data(), buffer.size(), ec, n), Status::done_and_exhausted);
  EXPECT_EQ(ec, asio::error::eof);
  EXPECT_EQ(n, 0u);
}

// Through Asio's reactor: after a draining read, reads of any kind still see what comes next —
// more data, or a close that came with the data. The first read waits in the reactor before
// anything is sent, so the edge that brings the data is spent on it (a read that finds data at
// once leaves that edge for the next read).
TEST(DrainHintReadTest, ReadsAfterADrainingReadSeeWhatComesNext) {
  for (const bool close_with_data : {false, true}) {
    Connection c;
    std::array<char, 64> buffer{};
    std::string got;
    std::optional<boost::system::error_code> second;
    asio::steady_timer later(c.io);
    c.server.async_read_some(
        DrainHintBuffer{asio::buffer(buffer)}, [&](boost::system::error_code ec, size_t n) {
          ASSERT_FALSE(ec);
          got.assign(buffer.data(), n);
          // The next read is Asio's own; it must complete when "second" (or the close) comes.
          c.server.async_read_some(asio::buffer(buffer),
                                   [&](boost::system::error_code ec2, size_t n2) {
                                     second = ec2;
                                     got.append(buffer.data(), n2);
                                   });
          if (!close_with_data) {
            later.expires_after(std::chrono::milliseconds(50));
            later.async_wait([&](boost::system::error_code) { c.Send("second"); });
          }
        });
    c.Send("first");
    if (close_with_data) c.client.shutdown(tcp::socket::shutdown_send);
    c.io.run_for(std::chrono::seconds(3));
    ASSERT_TRUE(second.has_value()) << "the read after the draining one never completed"
                                    << (close_with_data ? " (close sent with the data)" : "");
    if (close_with_data) {
      EXPECT_EQ(*second, asio::error::eof);
      EXPECT_EQ(got, "first");
    } else {
      EXPECT_FALSE(*second);
      EXPECT_EQ(got, "firstsecond");
    }
  }
}

TEST(DrainHintReadTest, WithoutTheHintAReadIsNeverCalledDrained) {
  Connection c;
  const int off = 0;
  ASSERT_EQ(setsockopt(c.server.native_handle(), IPPROTO_TCP, TCP_INQ, &off, sizeof(off)), 0);
  c.Send("hello");
  c.AwaitReadable();
  std::array<char, 64> buffer{};
  boost::system::error_code ec;
  size_t n = 0;
  EXPECT_EQ(c.Read(buffer.data(), buffer.size(), ec, n), Status::done);
  EXPECT_EQ(n, 5u);
}

}  // namespace
}  // namespace warmroute::net
