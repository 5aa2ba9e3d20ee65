#include "gateway/tenancy/reconnect_backoff.h"

#include <gtest/gtest.h>

namespace warmroute::gateway {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(ReconnectBackoffTest, AttemptsFreelyUntilTheFirstFailure) {
  ManualClock clock;
  ReconnectBackoff backoff(seconds(1), seconds(10));
  EXPECT_TRUE(backoff.MayAttempt(clock.Now()));
  EXPECT_EQ(backoff.Remaining(clock.Now()), Duration::zero());
  EXPECT_EQ(backoff.consecutive_failures(), 0);
}

TEST(ReconnectBackoffTest, WaitsDoublingDelaysUpToTheMaximum) {
  ManualClock clock(TimePoint{} + seconds(100));
  ReconnectBackoff backoff(seconds(1), seconds(10));
  const Duration expected[] = {seconds(1), seconds(2),  seconds(4),
                               seconds(8), seconds(10), seconds(10)};
  for (Duration delay : expected) {
    backoff.RecordFailure(clock.Now());
    EXPECT_EQ(backoff.current_delay(), delay);
    EXPECT_FALSE(backoff.MayAttempt(clock.Now()));
    clock.Advance(delay - milliseconds(1));
    EXPECT_FALSE(backoff.MayAttempt(clock.Now()));
    EXPECT_EQ(backoff.Remaining(clock.Now()), milliseconds(1));
    clock.Advance(milliseconds(1));
    EXPECT_TRUE(backoff.MayAttempt(clock.Now()));
  }
  EXPECT_EQ(backoff.consecutive_failures(), 6);
}

TEST(ReconnectBackoffTest, ASuccessResetsTheDelay) {
  ManualClock clock(TimePoint{} + seconds(5));
  ReconnectBackoff backoff(milliseconds(500), seconds(10));
  backoff.RecordFailure(clock.Now());
  backoff.RecordFailure(clock.Now());
  EXPECT_EQ(backoff.current_delay(), seconds(1));
  backoff.RecordSuccess();
  EXPECT_TRUE(backoff.MayAttempt(clock.Now()));
  backoff.RecordFailure(clock.Now());
  EXPECT_EQ(backoff.current_delay(), milliseconds(500));
}

}  // namespace
}  // namespace warmroute::gateway
