#include "gateway/kv_events/subscription_plan.h"

#include <gtest/gtest.h>

namespace warmroute::gateway {
namespace {

FeedSpec Spec(routing::BackendId id, std::string endpoint) {
  return {.backend = id,
          .name = "b" + std::to_string(id),
          .kv_events = {.endpoint = std::move(endpoint)},
          .block_size = 16};
}

TEST(SubscriptionPlanTest, OpensNewBackendsClosesGoneOnesAndKeepsTheRest) {
  SubscriptionPlan plan;
  SubscriptionChanges c = plan.Update({Spec(0, "tcp://h:1"), Spec(1, "tcp://h:2")});
  ASSERT_EQ(c.open.size(), 2u);
  EXPECT_TRUE(c.close.empty());

  c = plan.Update({Spec(0, "tcp://h:1"), Spec(1, "tcp://h:2")});
  EXPECT_TRUE(c.open.empty());
  EXPECT_TRUE(c.close.empty());

  c = plan.Update({Spec(1, "tcp://h:2"), Spec(2, "tcp://h:3")});  // 0 removed, 2 added
  EXPECT_EQ(c.close, std::vector<routing::BackendId>{0});
  ASSERT_EQ(c.open.size(), 1u);
  EXPECT_EQ(c.open[0].backend, 2u);
  EXPECT_EQ(plan.size(), 2u);
}

TEST(SubscriptionPlanTest, AChangedSpecIsReopenedAndADisabledOneClosed) {
  SubscriptionPlan plan;
  plan.Update({Spec(0, "tcp://h:1"), Spec(1, "tcp://h:2")});
  FeedSpec moved = Spec(0, "tcp://h:9");
  FeedSpec other_block = Spec(1, "tcp://h:2");
  other_block.block_size = 32;
  SubscriptionChanges c = plan.Update({moved, other_block});
  EXPECT_EQ(c.close, (std::vector<routing::BackendId>{0, 1}));
  ASSERT_EQ(c.open.size(), 2u);
  EXPECT_EQ(c.open[0].kv_events.endpoint, "tcp://h:9");

  c = plan.Update({Spec(0, "")});  // kv_events gone from 0, backend 1 gone
  EXPECT_EQ(c.close, (std::vector<routing::BackendId>{0, 1}));
  EXPECT_TRUE(c.open.empty());
  EXPECT_EQ(plan.size(), 0u);
}

}  // namespace
}  // namespace warmroute::gateway
