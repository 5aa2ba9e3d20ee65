#include "gateway/tenancy/fair_queue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace warmroute::gateway {
namespace {

using Outcome = FairQueue::Arrival::Outcome;
using ::testing::ElementsAre;
using ::testing::Optional;

// Drives a FairQueue and remembers whose each waiter is: who gets each freed slot, in order.
class Tenants {
 public:
  Tenants(int64_t max_in_flight, int64_t max_queue) : queue_(max_in_flight, max_queue) {}

  // `tenant` arrives with `n` requests; returns the last one's arrival.
  FairQueue::Arrival Arrive(const std::string& tenant, double weight, int n = 1) {
    FairQueue::Arrival arrival;
    for (int i = 0; i < n; ++i) {
      arrival = queue_.Arrive(tenant, weight);
      if (arrival.outcome == Outcome::kQueued) tenant_of_[arrival.waiter] = tenant;
    }
    return arrival;
  }

  // The tenants that `n` releases hand the slot to ("" for a slot freed with nobody waiting).
  std::vector<std::string> Release(int n = 1) {
    std::vector<std::string> granted;
    for (int i = 0; i < n; ++i) {
      const std::optional<FairQueue::WaiterId> next = queue_.Release();
      granted.push_back(next ? tenant_of_.at(*next) : "");
    }
    return granted;
  }

  const std::string& TenantOf(FairQueue::WaiterId waiter) const { return tenant_of_.at(waiter); }
  FairQueue& queue() { return queue_; }

 private:
  FairQueue queue_;
  absl::flat_hash_map<FairQueue::WaiterId, std::string> tenant_of_;
};

TEST(FairQueueTest, AdmitsAtOnceWhileASlotIsFree) {
  FairQueue queue(2, 10);
  EXPECT_EQ(queue.Arrive("a", 1).outcome, Outcome::kAdmitted);
  EXPECT_EQ(queue.Arrive("b", 1).outcome, Outcome::kAdmitted);
  const FairQueue::Arrival third = queue.Arrive("a", 1);
  EXPECT_EQ(third.outcome, Outcome::kQueued);
  EXPECT_EQ(third.pushed_out, std::nullopt);
  EXPECT_EQ(queue.in_flight(), 2);
  EXPECT_EQ(queue.queued(), 1);
}

TEST(FairQueueTest, OneTenantIsServedInArrivalOrder) {
  FairQueue queue(1, 10);
  ASSERT_EQ(queue.Arrive("", 1).outcome, Outcome::kAdmitted);
  std::vector<FairQueue::WaiterId> waiters;
  for (int i = 0; i < 4; ++i) waiters.push_back(queue.Arrive("", 1).waiter);
  EXPECT_EQ(queue.queued(), 4);
  for (FairQueue::WaiterId waiter : waiters) {
    EXPECT_THAT(queue.Release(), Optional(waiter));
    EXPECT_EQ(queue.in_flight(), 1);  // handed over, not freed
  }
  EXPECT_EQ(queue.Release(), std::nullopt);
  EXPECT_EQ(queue.in_flight(), 0);
  EXPECT_EQ(queue.queued(), 0);
}

TEST(FairQueueTest, AFreedSlotWithNobodyWaitingAdmitsTheNextArrival) {
  FairQueue queue(1, 10);
  ASSERT_EQ(queue.Arrive("a", 1).outcome, Outcome::kAdmitted);
  EXPECT_EQ(queue.Release(), std::nullopt);
  EXPECT_EQ(queue.Arrive("b", 1).outcome, Outcome::kAdmitted);
  EXPECT_EQ(queue.in_flight(), 1);
}

TEST(FairQueueTest, SlotsFollowTheWeightsUnderSaturation) {
  Tenants tenants(1, 1000);
  tenants.Arrive("hold", 1);
  tenants.Arrive("heavy", 3, 400);
  tenants.Arrive("light", 1, 400);
  int heavy = 0;
  int light = 0;
  for (const std::string& tenant : tenants.Release(400)) {
    heavy += tenant == "heavy" ? 1 : 0;
    light += tenant == "light" ? 1 : 0;
  }
  EXPECT_EQ(heavy + light, 400);
  EXPECT_NEAR(heavy, 300, 1);
  EXPECT_NEAR(light, 100, 1);
}

TEST(FairQueueTest, AFloodingTenantDoesNotDelayAnotherBeyondItsShare) {
  Tenants tenants(1, 100);
  tenants.Arrive("flood", 1, 21);  // the first takes the slot
  tenants.Arrive("quiet", 1, 2);
  EXPECT_THAT(tenants.Release(5), ElementsAre("flood", "quiet", "flood", "quiet", "flood"));
}

TEST(FairQueueTest, AnIdleTenantCannotBankCredit) {
  Tenants tenants(1, 100);
  tenants.Arrive("busy", 1, 21);
  // "idle" waited for nothing while "busy" was served ten times.
  EXPECT_EQ(tenants.Release(10), std::vector<std::string>(10, "busy"));
  tenants.Arrive("idle", 1, 5);
  // It starts at the current virtual time: the slots alternate instead of going to it five
  // times in a row.
  EXPECT_THAT(tenants.Release(6), ElementsAre("idle", "busy", "idle", "busy", "idle", "busy"));
}

TEST(FairQueueTest, ATenantGainsNothingByGoingIdle) {
  Tenants tenants(1, 100);
  tenants.Arrive("hold", 1);
  tenants.Arrive("a", 1);
  tenants.Arrive("b", 1, 10);
  EXPECT_THAT(tenants.Release(2), ElementsAre("a", "b"));
  // "a" was served ahead of "b" and has nobody waiting. It comes back with the virtual time it
  // reached, not the earlier current one: "b" goes first.
  tenants.Arrive("a", 1, 2);
  EXPECT_THAT(tenants.Release(3), ElementsAre("b", "a", "b"));
}

TEST(FairQueueTest, VirtualTimeTiesGoToTheOlderHead) {
  Tenants first_a(1, 10);
  first_a.Arrive("hold", 1);
  first_a.Arrive("a", 1);
  first_a.Arrive("b", 1);
  EXPECT_THAT(first_a.Release(2), ElementsAre("a", "b"));

  Tenants first_b(1, 10);
  first_b.Arrive("hold", 1);
  first_b.Arrive("b", 1);
  first_b.Arrive("a", 1);
  EXPECT_THAT(first_b.Release(2), ElementsAre("b", "a"));
}

TEST(FairQueueTest, ATinyWeightDoesNotEndFairnessForEveryone) {
  Tenants tenants(1, 100);
  // 1 / 1e-310 is infinite: the tenant's virtual time, then the virtual clock, would become
  // infinite, and every later tie would fall to arrival order.
  tenants.Arrive("tiny", 1e-310, 3);  // one holds the slot, two wait
  EXPECT_THAT(tenants.Release(2), ElementsAre("tiny", "tiny"));
  tenants.Arrive("heavy", 3, 30);
  tenants.Arrive("light", 1, 30);
  int heavy = 0;
  for (const std::string& t : tenants.Release(20)) heavy += t == "heavy" ? 1 : 0;
  EXPECT_EQ(heavy, 15);
}

TEST(FairQueueTest, AFullQueueRefusesATenantThatHoldsItsShare) {
  Tenants tenants(1, 4);
  tenants.Arrive("flood", 1, 5);
  EXPECT_EQ(tenants.queue().queued(), 4);
  const FairQueue::Arrival refused = tenants.Arrive("flood", 1);
  EXPECT_EQ(refused.outcome, Outcome::kRefused);
  EXPECT_EQ(tenants.queue().queued(), 4);
}

TEST(FairQueueTest, AFullQueuePushesOutTheFloodersNewestWaiter) {
  Tenants tenants(1, 4);
  tenants.Arrive("flood", 1);
  const FairQueue::Arrival newest = tenants.Arrive("flood", 1, 4);
  const FairQueue::Arrival quiet = tenants.Arrive("quiet", 1);
  EXPECT_EQ(quiet.outcome, Outcome::kQueued);
  EXPECT_THAT(quiet.pushed_out, Optional(newest.waiter));
  EXPECT_EQ(tenants.queue().queued(), 4);
  EXPECT_FALSE(tenants.queue().Withdraw(newest.waiter));  // no longer waiting
  // Virtual times tie: the older head first.
  EXPECT_THAT(tenants.Release(5), ElementsAre("flood", "quiet", "flood", "flood", ""));
}

TEST(FairQueueTest, ATenantBelowItsWeightedShareIsNotRefused) {
  Tenants tenants(1, 4);
  tenants.Arrive("hold", 1);
  tenants.Arrive("light", 1, 2);
  tenants.Arrive("heavy", 3, 2);
  // Full. "heavy" holds 2/3 of a weighted place per waiter; "light" 2: a third "heavy" waiter
  // (3/3) is still below "light"'s 2.
  const FairQueue::Arrival heavy = tenants.Arrive("heavy", 3);
  EXPECT_EQ(heavy.outcome, Outcome::kQueued);
  ASSERT_TRUE(heavy.pushed_out.has_value());
  EXPECT_EQ(tenants.TenantOf(*heavy.pushed_out), "light");
  // Now "light" holds 1 and "heavy" 3/3: a second "light" waiter (2) would be above "heavy".
  EXPECT_EQ(tenants.Arrive("light", 1).outcome, Outcome::kRefused);
}

TEST(FairQueueTest, ATenantAtItsShareIsRefused) {
  Tenants tenants(1, 4);
  tenants.Arrive("a", 1, 3);  // one holds the slot, two wait
  tenants.Arrive("b", 1, 2);
  // "a" and "b" each hold half the queue: a third waiter of either is refused.
  EXPECT_EQ(tenants.Arrive("a", 1).outcome, Outcome::kRefused);
  EXPECT_EQ(tenants.Arrive("b", 1).outcome, Outcome::kRefused);
  EXPECT_EQ(tenants.queue().queued(), 4);
}

TEST(FairQueueTest, AmongEquallyLongQueuesTheNewestWaiterIsPushedOut) {
  Tenants tenants(1, 4);
  tenants.Arrive("hold", 1);
  tenants.Arrive("b", 1);
  tenants.Arrive("a", 1);
  tenants.Arrive("b", 1);
  const FairQueue::Arrival newest = tenants.Arrive("a", 1);
  const FairQueue::Arrival c = tenants.Arrive("c", 1);
  EXPECT_THAT(c.pushed_out, Optional(newest.waiter));
  EXPECT_EQ(tenants.TenantOf(newest.waiter), "a");
}

TEST(FairQueueTest, WithdrawKeepsTheCountsAndTheOrderRight) {
  Tenants tenants(1, 10);
  tenants.Arrive("hold", 1);
  const FairQueue::WaiterId first = tenants.Arrive("a", 1).waiter;
  const FairQueue::WaiterId second = tenants.Arrive("b", 1).waiter;
  const FairQueue::WaiterId third = tenants.Arrive("a", 1).waiter;
  EXPECT_EQ(tenants.queue().queued(), 3);
  EXPECT_TRUE(tenants.queue().Withdraw(first));
  EXPECT_EQ(tenants.queue().queued(), 2);
  EXPECT_FALSE(tenants.queue().Withdraw(first));
  EXPECT_EQ(tenants.queue().queued(), 2);
  EXPECT_THAT(tenants.queue().Release(), Optional(second));  // now the oldest head
  EXPECT_FALSE(tenants.queue().Withdraw(second));            // it holds the slot
  EXPECT_EQ(tenants.queue().in_flight(), 1);
  EXPECT_TRUE(tenants.queue().Withdraw(third));
  EXPECT_EQ(tenants.queue().queued(), 0);
  EXPECT_EQ(tenants.queue().Release(), std::nullopt);
  EXPECT_EQ(tenants.queue().in_flight(), 0);
}

TEST(FairQueueTest, AWithdrawnWaiterMakesRoomInAFullQueue) {
  Tenants tenants(1, 2);
  tenants.Arrive("a", 1);
  const FairQueue::WaiterId waiter = tenants.Arrive("a", 1).waiter;
  tenants.Arrive("a", 1);
  EXPECT_EQ(tenants.Arrive("a", 1).outcome, Outcome::kRefused);
  EXPECT_TRUE(tenants.queue().Withdraw(waiter));
  const FairQueue::Arrival arrival = tenants.Arrive("a", 1);
  EXPECT_EQ(arrival.outcome, Outcome::kQueued);
  EXPECT_EQ(arrival.pushed_out, std::nullopt);
}

TEST(FairQueueTest, WithNoQueueEveryArrivalBeyondTheSlotsIsRefused) {
  FairQueue queue(1, 0);
  EXPECT_EQ(queue.Arrive("a", 1).outcome, Outcome::kAdmitted);
  EXPECT_EQ(queue.Arrive("b", 1).outcome, Outcome::kRefused);
  EXPECT_EQ(queue.queued(), 0);
}

}  // namespace
}  // namespace warmroute::gateway
