// Coarse deadlines for socket I/O on the hot path: one ticker per io_context checks them, instead
// of an Asio timer armed and cancelled around every operation (Beast's basic_stream does that:
// per operation a timer-queue insertion and removal under the reactor's lock, an allocation and
// one more completion to run). A proxied request has three such waits (the client's next
// request, the upstream's response head, its body); these deadlines make them free.
//
// A CoarseDeadline guards one socket. Arm(timeout) before an operation, Disarm() after it. When
// the deadline passes first, the ticker cancels the socket's pending operations (they complete
// with operation_aborted) and TimedOut(ec) tells that apart from other cancellations until the
// next Arm.
//
// Precision: a deadline fires no earlier than `timeout` after Arm and at most two ticks
// (2 x kDeadlineTick) later. Meant for timeouts of a second and more (idle connections, first
// byte, idle streams), not for fine-grained timing.
//
// Cost: Arm and Disarm link and unlink a list node: no system call, no allocation. The ticker
// runs every kDeadlineTick while any deadline of its io_context is armed and visits only the
// deadlines due in that tick, plus those due a multiple of the wheel's span later (a timing
// wheel of kDeadlineWheelSlots slots).
//
// Usage:
//   CoarseDeadline deadline(socket);   // a TCP socket whose executor is an io_context's
//   deadline.Arm(std::chrono::seconds(60));
//   auto [ec, n] = co_await socket.async_read_some(buffer, ...);
//   deadline.Disarm();
//   if (deadline.TimedOut(ec)) ...;    // the read was cancelled by the deadline
//
// Thread-safety: the io_context must be run by one thread, and every deadline on it is used on
// that thread. A deadline must be destroyed before its socket (it disarms itself).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace warmroute::net {

inline constexpr std::chrono::milliseconds kDeadlineTick{20};
inline constexpr size_t kDeadlineWheelSlots = 256;  // 5.12 s of ticks

class DeadlineWheel;

namespace internal {
// A node of a wheel slot's circular list (the slot's head is one too).
struct DeadlineLink {
  DeadlineLink* prev = nullptr;
  DeadlineLink* next = nullptr;
};
}  // namespace internal

class CoarseDeadline : private internal::DeadlineLink {
 public:
  using Socket = boost::asio::basic_socket<boost::asio::ip::tcp,
                                           boost::asio::io_context::executor_type>;
  explicit CoarseDeadline(Socket& socket);
  ~CoarseDeadline();
  CoarseDeadline(const CoarseDeadline&) = delete;
  CoarseDeadline& operator=(const CoarseDeadline&) = delete;

  // Fires `timeout` from now (re-arming replaces the previous deadline).
  void Arm(std::chrono::milliseconds timeout);
  void Disarm();
  bool armed() const { return prev != nullptr; }

  // True when `ec` is the cancellation this deadline caused (since the last Arm).
  bool TimedOut(const boost::system::error_code& ec) const;

 private:
  friend class DeadlineWheel;
  Socket* socket_;
  DeadlineWheel* wheel_;
  uint64_t due_tick_ = 0;
  bool expired_ = false;
};

}  // namespace warmroute::net
