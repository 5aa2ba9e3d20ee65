#include "net/coarse_deadline.h"

#include <gtest/gtest.h>

#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <vector>

namespace warmroute::net {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Socket = asio::basic_stream_socket<tcp, asio::io_context::executor_type>;
using Acceptor = asio::basic_socket_acceptor<tcp, asio::io_context::executor_type>;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A connected pair of TCP sockets on loopback; reads on `a` wait for writes on `b`.
struct SocketPair {
  explicit SocketPair(asio::io_context& io) : a(io), b(io) {
    Acceptor acceptor(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    a.connect(acceptor.local_endpoint());
    acceptor.accept(b);
  }
  Socket a;
  Socket b;
};

// The outcome of one read on `a` under a deadline.
struct ReadResult {
  boost::system::error_code ec;
  bool timed_out = false;
  milliseconds after{0};
};

void StartRead(Socket& socket, CoarseDeadline& deadline, char& byte,
               std::optional<ReadResult>& result) {
  const Clock::time_point start = Clock::now();
  socket.async_read_some(asio::buffer(&byte, 1), [&, start](boost::system::error_code ec, size_t) {
    deadline.Disarm();
    result = ReadResult{ec, deadline.TimedOut(ec),
                        std::chrono::duration_cast<milliseconds>(Clock::now() - start)};
  });
}

TEST(CoarseDeadlineTest, CancelsAReadThatOutlivesIt) {
  asio::io_context io;
  SocketPair pair(io);
  CoarseDeadline deadline(pair.a);
  char byte = 0;
  std::optional<ReadResult> result;
  deadline.Arm(milliseconds(100));
  StartRead(pair.a, deadline, byte, result);
  io.run_for(std::chrono::seconds(2));
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->ec, asio::error::operation_aborted);
  EXPECT_TRUE(result->timed_out);
  // Never early; at most two ticks late (plus scheduling slack on a loaded machine).
  EXPECT_GE(result->after, milliseconds(100));
  EXPECT_LT(result->after, milliseconds(100) + 2 * kDeadlineTick + milliseconds(200));
}

TEST(CoarseDeadlineTest, ADisarmedDeadlineLeavesTheReadAlone) {
  asio::io_context io;
  SocketPair pair(io);
  CoarseDeadline deadline(pair.a);
  char byte = 0;
  std::optional<ReadResult> result;
  deadline.Arm(milliseconds(60));
  deadline.Disarm();
  EXPECT_FALSE(deadline.armed());
  StartRead(pair.a, deadline, byte, result);
  asio::steady_timer later(io, milliseconds(300));
  later.async_wait([&](boost::system::error_code) { asio::write(pair.b, asio::buffer("x", 1)); });
  io.run_for(std::chrono::seconds(2));
  ASSERT_TRUE(result.has_value());
  EXPECT_FALSE(result->ec) << result->ec.message();
  EXPECT_FALSE(result->timed_out);
  EXPECT_EQ(byte, 'x');
}

TEST(CoarseDeadlineTest, ReArmingReplacesTheDeadline) {
  asio::io_context io;
  SocketPair pair(io);
  CoarseDeadline deadline(pair.a);
  char byte = 0;
  std::optional<ReadResult> result;
  deadline.Arm(milliseconds(40));
  deadline.Arm(milliseconds(400));
  StartRead(pair.a, deadline, byte, result);
  io.run_for(std::chrono::seconds(2));
  ASSERT_TRUE(result.has_value());
  EXPECT_TRUE(result->timed_out);
  EXPECT_GE(result->after, milliseconds(400));
}

TEST(CoarseDeadlineTest, ADeadlineBeyondTheWheelsSpanWaitsForItsRound) {
  // Due one wheel span and two ticks from now: its slot comes up after two ticks, a round early.
  asio::io_context io;
  SocketPair pair(io);
  CoarseDeadline far(pair.a);
  CoarseDeadline near(pair.b);
  char far_byte = 0;
  char near_byte = 0;
  std::optional<ReadResult> far_result;
  std::optional<ReadResult> near_result;
  far.Arm(kDeadlineTick * (kDeadlineWheelSlots + 1));
  near.Arm(kDeadlineTick * 5);
  StartRead(pair.a, far, far_byte, far_result);
  StartRead(pair.b, near, near_byte, near_result);
  io.run_for(milliseconds(400));
  ASSERT_TRUE(near_result.has_value());
  EXPECT_TRUE(near_result->timed_out);
  EXPECT_FALSE(far_result.has_value());
  EXPECT_TRUE(far.armed());
  far.Disarm();
  pair.a.cancel();
  io.run_for(milliseconds(100));
  ASSERT_TRUE(far_result.has_value());
  EXPECT_FALSE(far_result->timed_out);  // cancelled, but not by the deadline
}

TEST(CoarseDeadlineTest, ManyDeadlinesEachFireOnce) {
  asio::io_context io;
  constexpr int kPairs = 20;
  std::vector<std::unique_ptr<SocketPair>> pairs;
  std::vector<std::unique_ptr<CoarseDeadline>> deadlines;
  std::vector<char> bytes(kPairs);
  std::vector<std::optional<ReadResult>> results(kPairs);
  for (int i = 0; i < kPairs; ++i) {
    pairs.push_back(std::make_unique<SocketPair>(io));
    deadlines.push_back(std::make_unique<CoarseDeadline>(pairs.back()->a));
    deadlines.back()->Arm(milliseconds(10 * i));
    StartRead(pairs.back()->a, *deadlines.back(), bytes[i], results[i]);
  }
  io.run_for(std::chrono::seconds(3));
  for (int i = 0; i < kPairs; ++i) {
    ASSERT_TRUE(results[i].has_value()) << i;
    EXPECT_TRUE(results[i]->timed_out) << i;
    EXPECT_GE(results[i]->after, milliseconds(10 * i)) << i;
  }
}

TEST(CoarseDeadlineTest, TheTickerStopsWhenNothingIsArmed) {
  // io.run() returns once the last deadline fired: the ticker keeps no work alive.
  asio::io_context io;
  SocketPair pair(io);
  CoarseDeadline deadline(pair.a);
  char byte = 0;
  std::optional<ReadResult> result;
  deadline.Arm(milliseconds(50));
  StartRead(pair.a, deadline, byte, result);
  const Clock::time_point start = Clock::now();
  io.run();
  EXPECT_TRUE(result.has_value());
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
}

}  // namespace
}  // namespace warmroute::net
