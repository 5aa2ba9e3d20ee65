#include "core/routing/policies/llmd_weighted.h"

#include "core/routing/policies/policy_test_util.h"
#include "core/routing/policy_registry.h"
#include "gtest/gtest.h"

namespace warmroute::routing {
namespace {

using testing::Chain;
using testing::Request;
using testing::TestFleet;

EngineMetricsSample Metrics(int64_t waiting, double kv_usage) {
  return {.num_running = 0, .num_waiting = waiting, .kv_usage = kv_usage, .scraped_at = {}};
}

TEST(LlmdWeightedPolicyTest, WeightedSumOfPrefixQueueAndKvScores) {
  TestFleet fleet;
  fleet.Add("a");
  fleet.Add("b");
  fleet.Add("c");
  RoutingRequest request = Request(1, Chain(1, 10), 160);
  fleet.index().Insert(0, request.key.block_hashes);  // prefix 1.0 on a
  fleet.at(0).metrics = Metrics(10, 0.9);             // longest queue, fullest cache
  fleet.at(1).metrics = Metrics(0, 0.5);
  fleet.at(2).metrics = Metrics(5, 0.0);
  LlmdWeightedPolicy policy({}, "llmd_weighted");
  RoutingContext ctx = fleet.Context(request);
  Decision d = policy.Route(request, ctx);
  // a: 3*1 + 2*0 + 2*0.1 = 3.2; b: 0 + 2*1 + 2*0.5 = 3.0; c: 0 + 2*0.5 + 2*1 = 3.0.
  EXPECT_DOUBLE_EQ(d.scores[0].score, -3.2);
  EXPECT_DOUBLE_EQ(d.scores[1].score, -3.0);
  EXPECT_DOUBLE_EQ(d.scores[2].score, -3.0);
  EXPECT_EQ(d.backend, 0u);
  EXPECT_EQ(d.reason, Reason::kCacheHit);

  // A fuller queue on a tips it: prefix 3 < queue and KV headroom elsewhere.
  fleet.at(0).metrics = Metrics(10, 1.0);
  fleet.at(2).metrics = Metrics(0, 0.0);
  RoutingContext ctx2 = fleet.Context(request);
  EXPECT_EQ(policy.Route(request, ctx2).backend, 2u);
}

TEST(LlmdWeightedPolicyTest, FallsBackToInFlightWithoutMetrics) {
  TestFleet fleet;
  fleet.Add("a", 8);
  fleet.Add("b", 0);
  RoutingRequest request = Request(1, Chain(1, 10), 160);
  fleet.index().Insert(0, std::vector<uint64_t>(request.key.block_hashes.begin(),
                                                request.key.block_hashes.begin() + 5));
  LlmdWeightedPolicy policy({}, "llmd_weighted");
  RoutingContext ctx = fleet.Context(request);
  // a: 3*0.5 + 0 + 2 = 3.5; b: 0 + 2 + 2 = 4.
  EXPECT_EQ(policy.Route(request, ctx).backend, 1u);
}

// llmd_precise: llm-d's precise example weighs the prefix 2 against 1 + 1: half a prefix match
// outweighs a full queue, where llmd_weighted's 3 against 2 + 2 does not.
TEST(LlmdWeightedPolicyTest, PreciseWeightsFavourThePrefixMore) {
  TestFleet fleet;
  fleet.Add("a", 8);
  fleet.Add("b", 0);
  RoutingRequest request = Request(1, Chain(1, 10), 160);
  fleet.index().Insert(0, std::vector<uint64_t>(request.key.block_hashes.begin(),
                                                request.key.block_hashes.begin() + 6));
  std::unique_ptr<Policy> precise = MakePolicy("llmd_precise", {}).value();
  std::unique_ptr<Policy> weighted = MakePolicy("llmd_weighted", {}).value();
  EXPECT_EQ(precise->name(), "llmd_precise");
  RoutingContext ctx = fleet.Context(request);
  // precise: a = 2*0.6 + 0 + 1 = 2.2 > b = 0 + 1 + 1 = 2.
  EXPECT_EQ(precise->Route(request, ctx).backend, 0u);
  RoutingContext ctx2 = fleet.Context(request);
  // weighted: a = 3*0.6 + 0 + 2 = 3.8 < b = 0 + 2 + 2 = 4.
  EXPECT_EQ(weighted->Route(request, ctx2).backend, 1u);
}

}  // namespace
}  // namespace warmroute::routing
