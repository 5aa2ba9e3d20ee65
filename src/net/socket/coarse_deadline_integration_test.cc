#include "net/socket/coarse_deadline.h"

#include <gtest/gtest.h>

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

// The outcome of one read under a deadline.
struct ReadResult {
  boost::system::error_code ec;
  bool timed_out = false;
  milliseconds after{0};
};

// A connected pair of TCP sockets on loopback and a deadline on `a`; Read() starts a one-byte
// read on `a` (which waits for a write on `b`) and records its outcome in `result`.
struct GuardedRead {
  explicit GuardedRead(asio::io_context& io) : a(io), b(io), deadline(a) {
    Acceptor acceptor(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    a.connect(acceptor.local_endpoint());
    acceptor.accept(b);
  }

  void Read() {
    const Clock::time_point start = Clock::now();
    a.async_read_some(asio::buffer(&byte, 1), [this, start](boost::system::error_code ec, size_t) {
      deadline.Disarm();
      result = ReadResult{ec, deadline.TimedOut(ec),
                          std::chrono::duration_cast<milliseconds>(Clock::now() - start)};
    });
  }

  Socket a;
  Socket b;
  CoarseDeadline deadline;
  char byte = 0;
  std::optional<ReadResult> result;
};

TEST(CoarseDeadlineTest, CancelsAReadThatOutlivesIt) {
  asio::io_context io;
  GuardedRead read(io);
  read.deadline.Arm(milliseconds(100));
  read.Read();
  io.run_for(std::chrono::seconds(2));
  ASSERT_TRUE(read.result.has_value());
  EXPECT_EQ(read.result->ec, asio::error::operation_aborted);
  EXPECT_TRUE(read.result->timed_out);
  // Never early; at most two ticks late (plus scheduling slack on a loaded machine).
  EXPECT_GE(read.result->after, milliseconds(100));
  EXPECT_LT(read.result->after, milliseconds(100) + 2 * kDeadlineTick + milliseconds(200));
}

TEST(CoarseDeadlineTest, ADisarmedDeadlineLeavesTheReadAlone) {
  asio::io_context io;
  GuardedRead read(io);
  read.deadline.Arm(milliseconds(60));
  read.deadline.Disarm();
  EXPECT_FALSE(read.deadline.armed());
  read.Read();
  asio::steady_timer later(io, milliseconds(300));
  later.async_wait([&](boost::system::error_code) { asio::write(read.b, asio::buffer("x", 1)); });
  io.run_for(std::chrono::seconds(2));
  ASSERT_TRUE(read.result.has_value());
  EXPECT_FALSE(read.result->ec) << read.result->ec.message();
  EXPECT_FALSE(read.result->timed_out);
  EXPECT_EQ(read.byte, 'x');
}

TEST(CoarseDeadlineTest, ReArmingReplacesTheDeadline) {
  asio::io_context io;
  GuardedRead read(io);
  read.deadline.Arm(milliseconds(40));
  read.deadline.Arm(milliseconds(400));
  read.Read();
  io.run_for(std::chrono::seconds(2));
  ASSERT_TRUE(read.result.has_value());
  EXPECT_TRUE(read.result->timed_out);
  EXPECT_GE(read.result->after, milliseconds(400));
}

TEST(CoarseDeadlineTest, ADeadlineBeyondTheWheelsSpanWaitsForItsRound) {
  // Due one wheel span and two ticks from now: its slot comes up after two ticks, a round early.
  asio::io_context io;
  GuardedRead far(io);
  GuardedRead near(io);
  far.deadline.Arm(kDeadlineTick * (kDeadlineWheelSlots + 1));
  near.deadline.Arm(kDeadlineTick * 5);
  far.Read();
  near.Read();
  io.run_for(milliseconds(400));
  ASSERT_TRUE(near.result.has_value());
  EXPECT_TRUE(near.result->timed_out);
  EXPECT_FALSE(far.result.has_value());
  EXPECT_TRUE(far.deadline.armed());
  far.deadline.Disarm();
  far.a.cancel();
  io.run_for(milliseconds(100));
  ASSERT_TRUE(far.result.has_value());
  EXPECT_FALSE(far.result->timed_out);  // cancelled, but not by the deadline
}

TEST(CoarseDeadlineTest, ManyDeadlinesEachFireOnce) {
  asio::io_context io;
  constexpr int kReads = 20;
  std::vector<std::unique_ptr<GuardedRead>> reads;
  for (int i = 0; i < kReads; ++i) {
    reads.push_back(std::make_unique<GuardedRead>(io));
    reads.back()->deadline.Arm(milliseconds(10 * i));
    reads.back()->Read();
  }
  io.run_for(std::chrono::seconds(3));
  for (int i = 0; i < kReads; ++i) {
    ASSERT_TRUE(reads[i]->result.has_value()) << i;
    EXPECT_TRUE(reads[i]->result->timed_out) << i;
    EXPECT_GE(reads[i]->result->after, milliseconds(10 * i)) << i;
  }
}

TEST(CoarseDeadlineTest, TheTickerStopsWhenNothingIsArmed) {
  // io.run() returns once the last deadline fired: the ticker keeps no work alive.
  asio::io_context io;
  GuardedRead read(io);
  read.deadline.Arm(milliseconds(50));
  read.Read();
  const Clock::time_point start = Clock::now();
  io.run();
  EXPECT_TRUE(read.result.has_value());
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
}

}  // namespace
}  // namespace warmroute::net
