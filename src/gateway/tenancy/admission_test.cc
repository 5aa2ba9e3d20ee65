#include "gateway/tenancy/admission.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <optional>
#include <string>
#include <vector>

namespace warmroute::gateway {
namespace {

namespace asio = boost::asio;

// Drives AdmissionGate on one io_context with no sockets and no waiting on timers (the queue
// timeout is far away): who gets each freed slot, in order.
class AdmissionOrder {
 public:
  explicit AdmissionOrder(AdmissionOptions options) : gate_(options) {}

  // Starts a request of `tenant`; it holds its ticket until Finish().
  void Arrive(const std::string& tenant, double weight) {
    const size_t index = tickets_.size();
    tickets_.emplace_back();
    asio::co_spawn(
        io_.get_executor(),
        [this, tenant, weight, index]() -> net::Task<void> {
          absl::StatusOr<AdmissionGate::Ticket> t = co_await gate_.Admit(tenant, weight);
          if (t.ok()) {
            tickets_[index].emplace(std::move(*t));
            granted_.push_back(tenant);
          } else {
            refused_.push_back(tenant);
          }
        },
        asio::detached);
    Poll();
  }

  // Ends the oldest request still holding a slot.
  void FinishOne() {
    for (auto& t : tickets_) {
      if (t) {
        t.reset();
        break;
      }
    }
    Poll();
  }

  const std::vector<std::string>& granted() const { return granted_; }
  const std::vector<std::string>& refused() const { return refused_; }
  AdmissionGate& gate() { return gate_; }
  void Drain() {
    for (auto& t : tickets_) t.reset();
    Poll();
    io_.stop();
  }

 private:
  // Runs what is ready (an io_context that ran out of work must be restarted first).
  void Poll() {
    io_.restart();
    io_.poll();
  }

  asio::io_context io_;
  AdmissionGate gate_;
  std::vector<std::optional<AdmissionGate::Ticket>> tickets_;
  std::vector<std::string> granted_;
  std::vector<std::string> refused_;
};

constexpr AdmissionOptions kOneSlot{
    .max_in_flight = 1, .max_queue = 100, .queue_timeout = std::chrono::hours(1)};

TEST(AdmissionGateTest, OneTenantIsServedInArrivalOrder) {
  AdmissionOrder order(kOneSlot);
  for (const char* t : {"", "", ""}) order.Arrive(t, 1);
  EXPECT_EQ(order.gate().queued(), 2);
  order.FinishOne();
  order.FinishOne();
  EXPECT_EQ(order.granted().size(), 3u);
  order.Drain();
}

TEST(AdmissionGateTest, AFloodingTenantDoesNotDelayAnotherBeyondItsShare) {
  AdmissionOrder order(kOneSlot);
  order.Arrive("flood", 1);  // takes the slot
  for (int i = 0; i < 20; ++i) order.Arrive("flood", 1);
  order.Arrive("quiet", 1);
  order.Arrive("quiet", 1);
  for (int i = 0; i < 4; ++i) order.FinishOne();
  // Slots alternate between the two tenants although 20 flood requests arrived first.
  const std::vector<std::string> expected = {"flood", "flood", "quiet", "flood", "quiet"};
  EXPECT_EQ(order.granted(), expected);
  order.Drain();
}

TEST(AdmissionGateTest, SlotsFollowTheWeights) {
  AdmissionOrder order(kOneSlot);
  order.Arrive("hold", 1);
  for (int i = 0; i < 30; ++i) order.Arrive("heavy", 3);
  for (int i = 0; i < 30; ++i) order.Arrive("light", 1);
  for (int i = 0; i < 40; ++i) order.FinishOne();
  int heavy = 0;
  int light = 0;
  for (const std::string& t : order.granted()) {
    heavy += t == "heavy" ? 1 : 0;
    light += t == "light" ? 1 : 0;
  }
  EXPECT_EQ(heavy + light, 40);
  EXPECT_NEAR(static_cast<double>(heavy) / light, 3.0, 0.35);
  order.Drain();
}

TEST(AdmissionGateTest, AFullQueuePushesOutTheFloodersNewestWaiter) {
  AdmissionOrder order({.max_in_flight = 1, .max_queue = 4, .queue_timeout = std::chrono::hours(1)});
  order.Arrive("flood", 1);
  for (int i = 0; i < 4; ++i) order.Arrive("flood", 1);
  order.Arrive("flood", 1);  // its own queue is the longest: refused
  EXPECT_EQ(order.refused(), std::vector<std::string>{"flood"});
  order.Arrive("quiet", 1);  // pushes out the flood's newest waiter instead of being refused
  EXPECT_EQ(order.refused(), (std::vector<std::string>{"flood", "flood"}));
  EXPECT_EQ(order.gate().queued(), 4);
  order.FinishOne();
  EXPECT_EQ(order.granted().back(), "flood");  // virtual times tie: the older flow first
  order.FinishOne();
  EXPECT_EQ(order.granted().back(), "quiet");
  order.Drain();
}

}  // namespace
}  // namespace warmroute::gateway
