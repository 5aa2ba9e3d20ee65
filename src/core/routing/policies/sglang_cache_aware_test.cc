#include "core/routing/policies/sglang_cache_aware.h"

#include "core/routing/policies/policy_test_util.h"
#include "gtest/gtest.h"

namespace warmroute::routing {
namespace {

using testing::Chain;
using testing::Request;
using testing::TestFleet;

// 3 backends; backend 1 holds the request's first 30 of 40 blocks (match rate 0.75).
struct MatchSetup {
  TestFleet fleet;
  RoutingRequest request = Request(1, Chain(5, 40), 640);
  MatchSetup() {
    fleet.Add("a");
    fleet.Add("b");
    fleet.Add("c");
    fleet.index().Insert(1, std::vector<uint64_t>(request.key.block_hashes.begin(),
                                                  request.key.block_hashes.begin() + 30));
  }
  Decision Route(SglangCacheAwareOptions options = {}) {
    SglangCacheAwarePolicy policy(options);
    RoutingContext ctx = fleet.Context(request);
    return policy.Route(request, ctx);
  }
};

TEST(SglangCacheAwarePolicyTest, BalancedAndGoodMatchGoesToBestMatch) {
  MatchSetup s;
  s.fleet.at(0).in_flight = 1;
  s.fleet.at(1).in_flight = 20;  // busier, but within the balance thresholds (gap 19 <= 32)
  Decision d = s.Route();
  EXPECT_EQ(d.backend, 1u);
  EXPECT_EQ(d.reason, Reason::kCacheHit);
  EXPECT_EQ(d.predicted_cached_tokens, 30 * 16);
}

TEST(SglangCacheAwarePolicyTest, ImbalancedGoesToLeastLoadedDespiteMatch) {
  MatchSetup s;
  s.fleet.at(0).in_flight = 10;
  s.fleet.at(1).in_flight = 50;  // gap 45 > 32 and 50 > 1.1 x 5
  s.fleet.at(2).in_flight = 5;
  Decision d = s.Route();
  EXPECT_EQ(d.backend, 2u);
  EXPECT_EQ(d.reason, Reason::kLeastLoad);
}

TEST(SglangCacheAwarePolicyTest, LargeGapButSmallRatioIsBalanced) {
  MatchSetup s;
  s.fleet.at(0).in_flight = 400;
  s.fleet.at(1).in_flight = 430;  // gap 35 > 32, but 430 < 1.1 x 395
  s.fleet.at(2).in_flight = 395;
  EXPECT_EQ(s.Route().backend, 1u);
}

TEST(SglangCacheAwarePolicyTest, LowMatchGoesToSmallestTreeNotLeastLoaded) {
  MatchSetup s;
  s.request = Request(2, Chain(9, 40), 640);  // nobody holds it
  s.fleet.index().Insert(0, Chain(100, 50));  // backend 0: 50 entries, 1: 30, 2: 10
  s.fleet.index().Insert(2, Chain(101, 10));
  s.fleet.at(0).in_flight = 0;
  s.fleet.at(2).in_flight = 3;
  Decision d = s.Route();
  EXPECT_EQ(d.backend, 2u);
  EXPECT_EQ(d.reason, Reason::kLeastLoad);
}

TEST(SglangCacheAwarePolicyTest, ThresholdIsConfigurable) {
  MatchSetup s;
  // Match rate 0.75 is below a 0.8 threshold: smallest tree (backend 0 or 2, both empty: 0).
  Decision d = s.Route({.cache_threshold = 0.8});
  EXPECT_EQ(d.backend, 0u);
  // The newer defaults (0.3 / 64 / 1.5) still pick the match.
  EXPECT_EQ(
      s.Route({.cache_threshold = 0.3, .balance_abs_threshold = 64, .balance_rel_threshold = 1.5})
          .backend,
      1u);
}

}  // namespace
}  // namespace warmroute::routing
