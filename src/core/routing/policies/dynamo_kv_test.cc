#include "core/routing/policies/dynamo_kv.h"

#include <map>

#include "core/routing/policies/policy_test_util.h"
#include "gtest/gtest.h"

namespace warmroute::routing {
namespace {

using testing::Chain;
using testing::Request;
using testing::TestFleet;

TEST(DynamoKvPolicyTest, CostIsPrefillBlocksPlusDecodeBlocks) {
  TestFleet fleet;
  fleet.Add("a");
  fleet.Add("b");
  RoutingRequest request = Request(1, Chain(1, 64), 1024);
  fleet.index().Insert(1, std::vector<uint64_t>(request.key.block_hashes.begin(),
                                                request.key.block_hashes.begin() + 32));
  fleet.at(0).decode_context_tokens = 1600;  // 100 blocks
  fleet.SetOutstanding(1, 160);              // 10 blocks
  DynamoKvPolicy policy({});
  RoutingContext ctx = fleet.Context(request);
  Decision d = policy.Route(request, ctx);
  ASSERT_EQ(d.scores.size(), 2u);
  // a: prefill 64 + decode 100 + own 64 = 228; b: prefill 32 + 10 + decode 0 + own 64 = 106.
  EXPECT_DOUBLE_EQ(d.scores[0].score, 228);
  EXPECT_DOUBLE_EQ(d.scores[1].score, 106);
  EXPECT_EQ(d.backend, 1u);
  EXPECT_EQ(d.reason, Reason::kCacheHit);
}

TEST(DynamoKvPolicyTest, LoadOutweighsOverlap) {
  TestFleet fleet;
  fleet.Add("a");
  fleet.Add("b");
  RoutingRequest request = Request(1, Chain(1, 64), 1024);
  fleet.index().Insert(1, request.key.block_hashes);  // saves 63 blocks
  fleet.SetOutstanding(1, 16 * 80);                   // 80 blocks queued
  DynamoKvPolicy policy({});
  RoutingContext ctx = fleet.Context(request);
  EXPECT_EQ(policy.Route(request, ctx).backend, 0u);
}

TEST(DynamoKvPolicyTest, TiesGoToTheSmallerCachedSet) {
  TestFleet fleet;
  fleet.Add("a");
  fleet.Add("b");
  fleet.index().Insert(0, Chain(50, 20));
  fleet.index().Insert(1, Chain(51, 5));
  DynamoKvPolicy policy({});
  for (uint64_t id = 0; id < 10; ++id) {
    RoutingRequest request = Request(id, Chain(200 + id, 8), 128);
    RoutingContext ctx = fleet.Context(request);
    EXPECT_EQ(policy.Route(request, ctx).backend, 1u);
  }
}

TEST(DynamoKvPolicyTest, TemperatureSpreadsChoices) {
  TestFleet fleet;
  fleet.Add("a");
  fleet.Add("b");
  fleet.at(1).decode_context_tokens = 160;  // slightly costlier
  DynamoKvPolicy policy({.temperature = 1.0});
  std::map<BackendId, int> counts;
  for (uint64_t id = 0; id < 400; ++id) {
    RoutingRequest request = Request(id, Chain(id, 8), 128);
    RoutingContext ctx = fleet.Context(request);
    ++counts[policy.Route(request, ctx).backend];
  }
  EXPECT_GT(counts[0], counts[1]);
  EXPECT_GT(counts[1], 50);
}

}  // namespace
}  // namespace warmroute::routing
