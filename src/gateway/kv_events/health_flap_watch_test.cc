#include "gateway/kv_events/health_flap_watch.h"

#include <gtest/gtest.h>

namespace warmroute::gateway {
namespace {

TEST(HealthFlapWatchTest, FlapsWhenTheBackendWasFoundDownAgainSinceTheLastLook) {
  HealthFlapWatch watch;
  EXPECT_FALSE(watch.Observe(3));  // a backend with a past: the baseline
  EXPECT_FALSE(watch.Observe(3));
  EXPECT_TRUE(watch.Observe(4));
  EXPECT_FALSE(watch.Observe(4));
  EXPECT_TRUE(watch.Observe(6));  // two episodes between looks: one clear
}

}  // namespace
}  // namespace warmroute::gateway
