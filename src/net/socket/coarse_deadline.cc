#include "net/socket/coarse_deadline.h"

#include <array>
#include <boost/asio/steady_timer.hpp>

namespace warmroute::net {

namespace asio = boost::asio;

// One per io_context (an Asio service, created on first use and destroyed with the context): the
// armed deadlines in kDeadlineWheelSlots circular lists by due tick, and the ticker.
class DeadlineWheel : public asio::io_context::service {
 public:
  static asio::io_context::id id;

  explicit DeadlineWheel(asio::io_context& io) : service(io), timer_(io) {
    for (internal::DeadlineLink& head : slots_) head.prev = head.next = &head;
  }

  void Link(CoarseDeadline& d, std::chrono::milliseconds timeout) {
    // The next tick may come at once: one tick more than the timeout's so that none fires early.
    const auto ticks =
        static_cast<uint64_t>((timeout + kDeadlineTick - std::chrono::milliseconds(1)) /
                              kDeadlineTick) + 1;
    d.due_tick_ = now_ + ticks;
    internal::DeadlineLink& head = slots_[d.due_tick_ % kDeadlineWheelSlots];
    d.prev = &head;
    d.next = head.next;
    head.next->prev = &d;
    head.next = &d;
    ++armed_;
    if (!ticking_ && !shut_) {
      ticking_ = true;
      Schedule();
    }
  }

  void Unlink(CoarseDeadline& d) {
    d.prev->next = d.next;
    d.next->prev = d.prev;
    d.prev = d.next = nullptr;
    --armed_;
  }

 private:
  void shutdown() override { shut_ = true; }

  void Schedule() {
    timer_.expires_after(kDeadlineTick);
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || shut_) {
        ticking_ = false;
        return;
      }
      Tick();
    });
  }

  void Tick() {
    ++now_;
    internal::DeadlineLink& head = slots_[now_ % kDeadlineWheelSlots];
    for (internal::DeadlineLink* link = head.next; link != &head;) {
      internal::DeadlineLink* const next = link->next;
      auto* const d = static_cast<CoarseDeadline*>(link);
      if (d->due_tick_ <= now_) {
        Unlink(*d);
        d->expired_ = true;
        boost::system::error_code ignored;
        d->socket_->cancel(ignored);
      }
      link = next;
    }
    if (armed_ == 0) {
      ticking_ = false;
      return;
    }
    Schedule();
  }

  asio::steady_timer timer_;
  std::array<internal::DeadlineLink, kDeadlineWheelSlots> slots_;
  uint64_t now_ = 0;
  size_t armed_ = 0;
  bool ticking_ = false;
  bool shut_ = false;
};

asio::io_context::id DeadlineWheel::id;

CoarseDeadline::CoarseDeadline(Socket& socket)
    : socket_(&socket),
      wheel_(&asio::use_service<DeadlineWheel>(socket.get_executor().context())) {}

CoarseDeadline::~CoarseDeadline() { Disarm(); }

void CoarseDeadline::Arm(std::chrono::milliseconds timeout) {
  Disarm();
  expired_ = false;
  wheel_->Link(*this, timeout);
}

void CoarseDeadline::Disarm() {
  if (armed()) wheel_->Unlink(*this);
}

bool CoarseDeadline::TimedOut(const boost::system::error_code& ec) const {
  return expired_ && ec == asio::error::operation_aborted;
}

}  // namespace warmroute::net
