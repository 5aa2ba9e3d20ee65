#include "core/routing/policies/preble.h"

#include "core/routing/policies/policy_test_util.h"
#include "gtest/gtest.h"

namespace warmroute::routing {
namespace {

using testing::Chain;
using testing::Request;
using testing::TestFleet;

TEST(PreblePolicyTest, ExploitsWhenCachedPartExceedsMissedPart) {
  TestFleet fleet;
  fleet.Add("a");
  fleet.Add("b");
  RoutingRequest request = Request(1, Chain(1, 40), 640);
  fleet.index().Insert(1, std::vector<uint64_t>(request.key.block_hashes.begin(),
                                                request.key.block_hashes.begin() + 25));
  fleet.SetOutstanding(1, 20000);  // heavily loaded: exploit ignores it
  PreblePolicy policy({});
  RoutingContext ctx = fleet.Context(request);
  Decision d = policy.Route(request, ctx);
  EXPECT_EQ(d.backend, 1u);
  EXPECT_EQ(d.reason, Reason::kCacheHit);
}

TEST(PreblePolicyTest, ExploresByLoadCostOtherwise) {
  TestFleet fleet;
  fleet.Add("a");
  fleet.Add("b");
  fleet.Add("c");
  RoutingRequest request = Request(1, Chain(1, 40), 640);
  // b holds 15 of 40 blocks (240 of 640 tokens: less than the 400 missed): explore.
  fleet.index().Insert(1, std::vector<uint64_t>(request.key.block_hashes.begin(),
                                                request.key.block_hashes.begin() + 15));
  fleet.SetOutstanding(0, 100);             // a: 100 + 640
  fleet.at(1).decode_context_tokens = 600;  // b: 600 + 400
  fleet.SetOutstanding(2, 200);             // c: 200 + 640
  PreblePolicy policy({});
  RoutingContext ctx = fleet.Context(request);
  Decision d = policy.Route(request, ctx);
  EXPECT_EQ(d.backend, 0u);
  EXPECT_EQ(d.reason, Reason::kLeastLoad);
  EXPECT_DOUBLE_EQ(d.scores[1].score, 1000);
}

TEST(PreblePolicyTest, ExploitTiesGoToTheLowerLoad) {
  TestFleet fleet;
  fleet.Add("a");
  fleet.Add("b");
  RoutingRequest request = Request(1, Chain(1, 40), 640);
  fleet.index().Insert(0, request.key.block_hashes);
  fleet.index().Insert(1, request.key.block_hashes);
  fleet.SetOutstanding(0, 500);
  PreblePolicy policy({});
  RoutingContext ctx = fleet.Context(request);
  EXPECT_EQ(policy.Route(request, ctx).backend, 1u);
}

}  // namespace
}  // namespace warmroute::routing
