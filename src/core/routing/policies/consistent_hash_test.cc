#include "core/routing/policies/consistent_hash.h"

#include <cmath>
#include <map>

#include "core/routing/policies/policy_test_util.h"
#include "gtest/gtest.h"

namespace warmroute::routing {
namespace {

using testing::Chain;
using testing::Request;
using testing::TestFleet;

BackendId RouteOnce(Policy& policy, TestFleet& fleet, const RoutingRequest& request) {
  RoutingContext ctx = fleet.Context(request);
  return policy.Route(request, ctx).backend;
}

TEST(ConsistentHashPolicyTest, SamePrefixSameBackend) {
  TestFleet fleet;
  for (int i = 0; i < 8; ++i) fleet.Add("r" + std::to_string(i));
  ConsistentHashPolicy policy({});
  // Same first 4 blocks, different tails.
  std::vector<uint64_t> a = Chain(7, 4);
  std::vector<uint64_t> b = a;
  a.push_back(1);
  b.push_back(2);
  const BackendId first = RouteOnce(policy, fleet, Request(1, a, 100));
  EXPECT_EQ(RouteOnce(policy, fleet, Request(2, b, 100)), first);
  EXPECT_EQ(RouteOnce(policy, fleet, Request(3, Chain(7, 9), 200)), first);
}

TEST(ConsistentHashPolicyTest, PrefixesSpreadOverBackends) {
  TestFleet fleet;
  for (int i = 0; i < 8; ++i) fleet.Add("r" + std::to_string(i));
  ConsistentHashPolicy policy({});
  std::map<BackendId, int> counts;
  for (uint64_t p = 0; p < 4000; ++p)
    ++counts[RouteOnce(policy, fleet, Request(p, Chain(p, 6), 100))];
  ASSERT_EQ(counts.size(), 8u);
  for (const auto& [b, count] : counts) {
    EXPECT_GT(count, 350) << b;
    EXPECT_LT(count, 650) << b;
  }
}

TEST(ConsistentHashPolicyTest, SkipsBackendsOverTheLoadBound) {
  TestFleet fleet;
  for (int i = 0; i < 4; ++i) fleet.Add("r" + std::to_string(i));
  ConsistentHashPolicy policy({});
  RoutingRequest request = Request(1, Chain(3, 4), 100);
  const BackendId home = RouteOnce(policy, fleet, request);
  // Total in flight 8 on 4 backends: bound = ceil(1.25 * 9 / 4) = 3. The home holds 3: full.
  const std::vector<int64_t> others = {2, 2, 1};
  size_t k = 0;
  for (BackendId b = 0; b < 4; ++b) fleet.at(b).in_flight = b == home ? 3 : others[k++];
  RoutingContext ctx = fleet.Context(request);
  Decision d = policy.Route(request, ctx);
  EXPECT_NE(d.backend, home);
  EXPECT_LE(fleet.at(d.backend).in_flight + 1, 3);
  EXPECT_EQ(d.reason, Reason::kHash);
  // Below the bound again: back home.
  fleet.at(home).in_flight = 2;
  EXPECT_EQ(RouteOnce(policy, fleet, request), home);
}

TEST(ConsistentHashPolicyTest, BoundedLoadHoldsUnderASingleHotPrefix) {
  TestFleet fleet;
  for (int i = 0; i < 5; ++i) fleet.Add("r" + std::to_string(i));
  ConsistentHashPolicy policy({});
  // Every request has the same prefix and stays in flight.
  for (uint64_t id = 0; id < 100; ++id) {
    RoutingRequest request = Request(id, Chain(1, 8), 100);
    RoutingContext ctx = fleet.Context(request);
    const BackendId b = policy.Route(request, ctx).backend;
    int64_t total = 0;
    for (BackendId x = 0; x < 5; ++x) total += fleet.at(x).in_flight;
    const double bound = std::ceil(1.25 * static_cast<double>(total + 1) / 5);
    EXPECT_LE(static_cast<double>(fleet.at(b).in_flight + 1), bound);
    ++fleet.at(b).in_flight;
  }
  for (BackendId x = 0; x < 5; ++x) EXPECT_LE(fleet.at(x).in_flight, 25);
}

TEST(ConsistentHashPolicyTest, AddingABackendMovesAboutOneNthOfKeysAllToIt) {
  TestFleet fleet;
  for (int i = 0; i < 8; ++i) fleet.Add("r" + std::to_string(i));
  ConsistentHashPolicy policy({});
  constexpr int kKeys = 5000;
  std::vector<BackendId> before;
  for (uint64_t p = 0; p < kKeys; ++p)
    before.push_back(RouteOnce(policy, fleet, Request(p, Chain(p, 4), 100)));
  const BackendId added = fleet.Add("r8");
  int moved = 0;
  for (uint64_t p = 0; p < kKeys; ++p) {
    const BackendId now = RouteOnce(policy, fleet, Request(p, Chain(p, 4), 100));
    if (now != before[p]) {
      ++moved;
      EXPECT_EQ(now, added);
    }
  }
  const double fraction = static_cast<double>(moved) / kKeys;
  EXPECT_GT(fraction, 1.0 / 9 * 0.6);
  EXPECT_LT(fraction, 1.0 / 9 * 1.4);
}

TEST(ConsistentHashPolicyTest, RingDependsOnNamesNotIds) {
  TestFleet a;
  TestFleet b;
  for (std::string name : {"x", "y", "z"}) a.Add(name);
  for (std::string name : {"z", "x", "y"}) b.Add(name);
  ConsistentHashPolicy pa({});
  ConsistentHashPolicy pb({});
  for (uint64_t p = 0; p < 200; ++p) {
    RoutingRequest request = Request(p, Chain(p, 4), 100);
    const BackendId in_a = RouteOnce(pa, a, request);
    const BackendId in_b = RouteOnce(pb, b, request);
    EXPECT_EQ(a.at(in_a).name, b.at(in_b).name);
  }
}

}  // namespace
}  // namespace warmroute::routing
