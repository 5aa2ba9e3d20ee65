#include "gateway/fleet/discovery_reconciler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

namespace warmroute::gateway {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

using Outcome = absl::StatusOr<std::vector<DiscoveredEndpoint>>;

Outcome Addresses(std::vector<std::string> hosts, uint16_t port = 8000) {
  std::vector<DiscoveredEndpoint> out;
  for (std::string& host : hosts) out.push_back({std::move(host), port});
  return out;
}

class DiscoveryReconcilerTest : public ::testing::Test {
 protected:
  DiscoveryChanges Resolve(const Outcome& outcome, const std::set<std::string>& taken = {}) {
    clock_.Advance(std::chrono::seconds(5));
    return reconciler_.OnResolved(clock_.Now(), outcome, taken);
  }

  ManualClock clock_;
  DiscoveryReconciler reconciler_;
};

TEST(DiscoveredBackendNameTest, IsDnsAndTheAddressWithIpv6InBrackets) {
  EXPECT_EQ(DiscoveredBackendName({"10.0.0.5", 8000}), "dns:10.0.0.5:8000");
  EXPECT_EQ(DiscoveredBackendName({"fd00::5", 8000}), "dns:[fd00::5]:8000");
  EXPECT_EQ(EndpointAddress({"fd00::5", 80}), "[fd00::5]:80");
}

TEST_F(DiscoveryReconcilerTest, AddsEveryAddressOnceInAddressOrder) {
  DiscoveryChanges first = Resolve(Addresses({"10.0.0.6", "10.0.0.5", "10.0.0.6"}));
  EXPECT_EQ(first.transition, ResolveTransition::kNowOk);
  ASSERT_EQ(first.add.size(), 2u);
  EXPECT_EQ(first.add[0].host, "10.0.0.5");
  EXPECT_EQ(first.add[1].host, "10.0.0.6");
  EXPECT_TRUE(reconciler_.Owns("dns:10.0.0.5:8000"));
  EXPECT_EQ(reconciler_.backends(), 2u);

  DiscoveryChanges again = Resolve(Addresses({"10.0.0.5", "10.0.0.6"}));
  EXPECT_TRUE(again.empty());
  EXPECT_EQ(again.transition, ResolveTransition::kNone);
}

TEST_F(DiscoveryReconcilerTest, DrainsAVanishedAddressThenRemovesItOneResolutionLater) {
  (void)Resolve(Addresses({"10.0.0.5", "10.0.0.6"}));
  DiscoveryChanges vanished = Resolve(Addresses({"10.0.0.5"}));
  EXPECT_THAT(vanished.drain, ElementsAre("dns:10.0.0.6:8000"));
  EXPECT_THAT(vanished.remove, IsEmpty());
  EXPECT_TRUE(reconciler_.Owns("dns:10.0.0.6:8000"));

  DiscoveryChanges still_gone = Resolve(Addresses({"10.0.0.5"}));
  EXPECT_THAT(still_gone.drain, IsEmpty());
  EXPECT_THAT(still_gone.remove, ElementsAre("dns:10.0.0.6:8000"));
  EXPECT_FALSE(reconciler_.Owns("dns:10.0.0.6:8000"));
  EXPECT_EQ(reconciler_.backends(), 1u);
}

TEST_F(DiscoveryReconcilerTest, UndrainsAnAddressThatComesBackBeforeItIsRemoved) {
  (void)Resolve(Addresses({"10.0.0.5", "10.0.0.6"}));
  (void)Resolve(Addresses({"10.0.0.5"}));
  DiscoveryChanges back = Resolve(Addresses({"10.0.0.5", "10.0.0.6"}));
  EXPECT_THAT(back.undrain, ElementsAre("dns:10.0.0.6:8000"));
  EXPECT_THAT(back.add, IsEmpty());
  EXPECT_THAT(back.remove, IsEmpty());
  // Gone again: drained again, not removed at once.
  DiscoveryChanges gone = Resolve(Addresses({"10.0.0.5"}));
  EXPECT_THAT(gone.drain, ElementsAre("dns:10.0.0.6:8000"));
  EXPECT_THAT(gone.remove, IsEmpty());
}

TEST_F(DiscoveryReconcilerTest, AFailedResolutionKeepsTheLastGoodSetAndReportsEachTransitionOnce) {
  (void)Resolve(Addresses({"10.0.0.5", "10.0.0.6"}));
  const TimePoint good = clock_.Now();
  DiscoveryChanges failed = Resolve(absl::DeadlineExceededError("no answer within 1000 ms"));
  EXPECT_TRUE(failed.empty());
  EXPECT_EQ(failed.transition, ResolveTransition::kNowFailing);
  EXPECT_EQ(reconciler_.last_error().code(), absl::StatusCode::kDeadlineExceeded);
  DiscoveryChanges nxdomain = Resolve(absl::NotFoundError("NXDOMAIN"));
  EXPECT_TRUE(nxdomain.empty());
  EXPECT_EQ(nxdomain.transition, ResolveTransition::kNone);  // still failing: said once
  EXPECT_EQ(reconciler_.backends(), 2u);
  EXPECT_EQ(reconciler_.failures(), 2);
  EXPECT_EQ(reconciler_.resolutions(), 3);
  EXPECT_EQ(reconciler_.healthy(), false);
  EXPECT_EQ(reconciler_.last_success(), good);

  // Back: nothing changed meanwhile, so nothing to do but say so.
  DiscoveryChanges ok = Resolve(Addresses({"10.0.0.5", "10.0.0.6"}));
  EXPECT_TRUE(ok.empty());
  EXPECT_EQ(ok.transition, ResolveTransition::kNowOk);
  EXPECT_EQ(reconciler_.last_success(), clock_.Now());
  EXPECT_TRUE(reconciler_.last_error().ok());
}

TEST_F(DiscoveryReconcilerTest, AFailureWhileDrainingDoesNotRemove) {
  (void)Resolve(Addresses({"10.0.0.5", "10.0.0.6"}));
  (void)Resolve(Addresses({"10.0.0.5"}));
  EXPECT_TRUE(Resolve(absl::UnavailableError("SERVFAIL")).empty());
  EXPECT_TRUE(reconciler_.Owns("dns:10.0.0.6:8000"));
  EXPECT_THAT(Resolve(Addresses({"10.0.0.5"})).remove, ElementsAre("dns:10.0.0.6:8000"));
}

TEST_F(DiscoveryReconcilerTest, AnEmptyAnswerNeverEmptiesTheFleet) {
  (void)Resolve(Addresses({"10.0.0.5"}));
  DiscoveryChanges empty = Resolve(Addresses({}));
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.transition, ResolveTransition::kNowFailing);
  EXPECT_EQ(reconciler_.last_error().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(reconciler_.backends(), 1u);
}

TEST_F(DiscoveryReconcilerTest, TheFirstOutcomeIsAlwaysATransition) {
  EXPECT_EQ(Resolve(absl::UnavailableError("REFUSED")).transition,
            ResolveTransition::kNowFailing);
  EXPECT_FALSE(reconciler_.last_success().has_value());
}

TEST_F(DiscoveryReconcilerTest, SkipsAddressesOfBackendsItDoesNotOwn) {
  DiscoveryChanges changes = Resolve(Addresses({"10.0.0.5", "10.0.0.6"}), {"10.0.0.5:8000"});
  ASSERT_EQ(changes.add.size(), 1u);
  EXPECT_EQ(changes.add[0].host, "10.0.0.6");
  EXPECT_FALSE(reconciler_.Owns("dns:10.0.0.5:8000"));
}

// A configured backend may write an IPv6 address in another form than the DNS answer's
// (inet_ntop's): it has the address all the same.
TEST_F(DiscoveryReconcilerTest, SkipsAnAddressWrittenInAnotherForm) {
  const std::set<std::string> taken = {EndpointAddress({"FD00:0:0::5", 8000})};
  DiscoveryChanges changes = Resolve(Addresses({"fd00::5", "fd00::6"}), taken);
  ASSERT_EQ(changes.add.size(), 1u);
  EXPECT_EQ(changes.add[0].host, "fd00::6");
  EXPECT_FALSE(reconciler_.Owns("dns:[fd00::5]:8000"));
}

TEST_F(DiscoveryReconcilerTest, AddsAForgottenAddressAgain) {
  (void)Resolve(Addresses({"10.0.0.5"}));
  reconciler_.Forget("dns:10.0.0.5:8000");
  EXPECT_EQ(reconciler_.backends(), 0u);
  EXPECT_EQ(Resolve(Addresses({"10.0.0.5"})).add.size(), 1u);
}

TEST_F(DiscoveryReconcilerTest, KeepsPortsApartAndSrvPortsInTheName) {
  DiscoveryChanges changes =
      Resolve(std::vector<DiscoveredEndpoint>{{"10.0.0.5", 8000}, {"10.0.0.5", 8001}});
  ASSERT_EQ(changes.add.size(), 2u);
  EXPECT_TRUE(reconciler_.Owns("dns:10.0.0.5:8001"));
}

TEST_F(DiscoveryReconcilerTest, ARenameKeepsTheMembersAndMakesTheNextOutcomeATransition) {
  (void)Resolve(Addresses({"10.0.0.5"}));
  (void)Resolve(absl::NotFoundError("NXDOMAIN"));
  reconciler_.Rename();
  EXPECT_FALSE(reconciler_.healthy().has_value());
  EXPECT_FALSE(reconciler_.last_success().has_value());
  EXPECT_EQ(reconciler_.backends(), 1u);
  DiscoveryChanges failing = Resolve(absl::NotFoundError("NXDOMAIN"));
  EXPECT_TRUE(failing.empty());
  EXPECT_EQ(failing.transition, ResolveTransition::kNowFailing);
  reconciler_.Rename();
  DiscoveryChanges other = Resolve(Addresses({"10.0.0.6"}));
  EXPECT_EQ(other.transition, ResolveTransition::kNowOk);
  EXPECT_THAT(other.drain, ElementsAre("dns:10.0.0.5:8000"));
  ASSERT_EQ(other.add.size(), 1u);
}

TEST_F(DiscoveryReconcilerTest, StopRemovesEveryDiscoveredBackend) {
  (void)Resolve(Addresses({"10.0.0.5", "10.0.0.6"}));
  (void)Resolve(Addresses({"10.0.0.5"}));  // one draining
  DiscoveryChanges stop = reconciler_.Stop();
  EXPECT_THAT(stop.remove, ElementsAre("dns:10.0.0.5:8000", "dns:10.0.0.6:8000"));
  EXPECT_EQ(reconciler_.backends(), 0u);
  EXPECT_FALSE(reconciler_.healthy().has_value());
}

}  // namespace
}  // namespace warmroute::gateway
