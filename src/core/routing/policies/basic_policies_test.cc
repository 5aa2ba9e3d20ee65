// Tests of the load-only baselines: round_robin, random, least_request, power_of_two.
#include <map>
#include <set>

#include "core/routing/policies/least_request.h"
#include "core/routing/policies/policy_test_util.h"
#include "core/routing/policies/power_of_two.h"
#include "core/routing/policies/random.h"
#include "core/routing/policies/round_robin.h"
#include "gtest/gtest.h"

namespace warmroute::routing {
namespace {

using testing::Chain;
using testing::Request;
using testing::TestFleet;

TEST(RoundRobinPolicyTest, VisitsCandidatesInTurn) {
  TestFleet fleet;
  for (int i = 0; i < 3; ++i) fleet.Add("r" + std::to_string(i));
  RoundRobinPolicy policy;
  std::vector<BackendId> chosen;
  for (uint64_t id = 0; id < 6; ++id) {
    RoutingRequest request = Request(id, Chain(id, 4), 100);
    RoutingContext ctx = fleet.Context(request);
    Decision d = policy.Route(request, ctx);
    EXPECT_EQ(d.reason, Reason::kRoundRobin);
    chosen.push_back(d.backend);
  }
  EXPECT_EQ(chosen, (std::vector<BackendId>{0, 1, 2, 0, 1, 2}));
}

TEST(RoundRobinPolicyTest, AlternatesAreTheNextInTurn) {
  TestFleet fleet;
  for (int i = 0; i < 3; ++i) fleet.Add("r" + std::to_string(i));
  RoundRobinPolicy policy;
  RoutingRequest request = Request(1, {}, 10);
  RoutingContext ctx = fleet.Context(request);
  Decision d = policy.Route(request, ctx);
  EXPECT_EQ(d.backend, 0u);
  EXPECT_EQ(d.alternates, (Alternates{1, 2}));
}

TEST(RandomPolicyTest, SameSeedSameChoicesAndEveryBackendUsed) {
  auto run = [] {
    TestFleet fleet;
    for (int i = 0; i < 4; ++i) fleet.Add("r" + std::to_string(i));
    RandomPolicy policy;
    std::vector<BackendId> chosen;
    for (uint64_t id = 0; id < 400; ++id) {
      RoutingRequest request = Request(id, {}, 10);
      RoutingContext ctx = fleet.Context(request);
      chosen.push_back(policy.Route(request, ctx).backend);
    }
    return chosen;
  };
  std::vector<BackendId> a = run();
  EXPECT_EQ(a, run());
  std::map<BackendId, int> counts;
  for (BackendId b : a) ++counts[b];
  ASSERT_EQ(counts.size(), 4u);
  for (const auto& [b, count] : counts) EXPECT_GT(count, 60) << b;
}

TEST(LeastRequestPolicyTest, PicksFewestInFlight) {
  TestFleet fleet;
  fleet.Add("a", 5);
  fleet.Add("b", 2);
  fleet.Add("c", 7);
  LeastRequestPolicy policy;
  RoutingRequest request = Request(1, {}, 10);
  RoutingContext ctx = fleet.Context(request);
  Decision d = policy.Route(request, ctx);
  EXPECT_EQ(d.backend, 1u);
  EXPECT_EQ(d.reason, Reason::kLeastLoad);
  EXPECT_EQ(d.alternates, (Alternates{0, 2}));
  ASSERT_EQ(d.scores.size(), 3u);
  EXPECT_EQ(d.scores[1].score, 2);
}

TEST(LeastRequestPolicyTest, TiesAreSpreadNotAlwaysTheLowestId) {
  TestFleet fleet;
  fleet.Add("a", 1);
  fleet.Add("b", 1);
  fleet.Add("c", 9);
  LeastRequestPolicy policy;
  std::set<BackendId> seen;
  for (uint64_t id = 0; id < 50; ++id) {
    RoutingRequest request = Request(id, {}, 10);
    RoutingContext ctx = fleet.Context(request);
    seen.insert(policy.Route(request, ctx).backend);
  }
  EXPECT_EQ(seen, (std::set<BackendId>{0, 1}));
}

TEST(PowerOfTwoPolicyTest, WithTwoBackendsAlwaysTheLessLoaded) {
  TestFleet fleet;
  fleet.Add("a", 4);
  fleet.Add("b", 1);
  PowerOfTwoPolicy policy;
  for (uint64_t id = 0; id < 20; ++id) {
    RoutingRequest request = Request(id, {}, 10);
    RoutingContext ctx = fleet.Context(request);
    Decision d = policy.Route(request, ctx);
    EXPECT_EQ(d.backend, 1u);
    EXPECT_EQ(d.alternates, (Alternates{0}));
  }
}

TEST(PowerOfTwoPolicyTest, NeverPicksTheMostLoadedOfMany) {
  TestFleet fleet;
  fleet.Add("a", 0);
  fleet.Add("b", 3);
  fleet.Add("c", 100);
  fleet.Add("d", 1);
  PowerOfTwoPolicy policy;
  for (uint64_t id = 0; id < 200; ++id) {
    RoutingRequest request = Request(id, {}, 10);
    RoutingContext ctx = fleet.Context(request);
    EXPECT_NE(policy.Route(request, ctx).backend, 2u);
  }
}

TEST(PowerOfTwoPolicyTest, SingleCandidate) {
  TestFleet fleet;
  fleet.Add("a", 3);
  PowerOfTwoPolicy policy;
  RoutingRequest request = Request(1, {}, 10);
  RoutingContext ctx = fleet.Context(request);
  EXPECT_EQ(policy.Route(request, ctx).backend, 0u);
}

}  // namespace
}  // namespace warmroute::routing
