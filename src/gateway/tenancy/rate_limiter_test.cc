#include "gateway/tenancy/rate_limiter.h"

#include <gtest/gtest.h>

namespace warmroute::gateway {
namespace {

using std::chrono::milliseconds;

TenantLimits Requests(double rate, double burst) {
  TenantLimits limits;
  limits.requests = BucketLimit{.rate_per_s = rate, .burst = burst};
  return limits;
}

TEST(LocalRateLimiterTest, ABucketAllowsItsBurstThenItsRate) {
  ManualClock clock;
  LocalRateLimiter limiter(clock);
  const TenantLimits limits = Requests(50, 10);
  int allowed = 0;
  // 3 s of 1 ms steps, one attempt each: the burst plus 50/s.
  for (int ms = 0; ms < 3000; ++ms) {
    clock.Set(TimePoint{} + milliseconds(ms));
    allowed += limiter.Take("a", limits, 100).allowed ? 1 : 0;
  }
  EXPECT_NEAR(allowed, 10 + 150, 1);
}

TEST(LocalRateLimiterTest, RefusalSaysWhichLimitAndWhenToRetry) {
  ManualClock clock;
  LocalRateLimiter limiter(clock);
  const TenantLimits limits = Requests(2, 1);
  EXPECT_TRUE(limiter.Take("a", limits, 0).allowed);
  const LimitDecision refused = limiter.Take("a", limits, 0);
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.limit, "requests");
  EXPECT_EQ(refused.retry_after, milliseconds(500));
  EXPECT_EQ(RetryAfterSeconds(refused.retry_after), 1);
  clock.Set(TimePoint{} + milliseconds(500));
  EXPECT_TRUE(limiter.Take("a", limits, 0).allowed);
}

TEST(LocalRateLimiterTest, TenantsHaveSeparateBuckets) {
  ManualClock clock;
  LocalRateLimiter limiter(clock);
  const TenantLimits limits = Requests(1, 1);
  EXPECT_TRUE(limiter.Take("a", limits, 0).allowed);
  EXPECT_FALSE(limiter.Take("a", limits, 0).allowed);
  EXPECT_TRUE(limiter.Take("b", limits, 0).allowed);
}

TEST(LocalRateLimiterTest, PromptTokensAreAllOrNothingWithTheRequestBucket) {
  ManualClock clock;
  LocalRateLimiter limiter(clock);
  TenantLimits limits = Requests(100, 100);
  limits.prompt_tokens = BucketLimit{.rate_per_s = 1000, .burst = 3000};
  EXPECT_TRUE(limiter.Take("a", limits, 2000).allowed);
  const LimitDecision refused = limiter.Take("a", limits, 2000);  // 1000 left
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.limit, "prompt_tokens");
  EXPECT_EQ(refused.retry_after, milliseconds(1000));
  // The refused request took no request token: 98 more small requests fit in the same instant.
  int small = 0;
  while (limiter.Take("a", limits, 10).allowed) ++small;
  EXPECT_EQ(small, 99);
}

TEST(LocalRateLimiterTest, APromptLargerThanTheBurstIsClampedNotRefusedForever) {
  ManualClock clock;
  LocalRateLimiter limiter(clock);
  TenantLimits limits;
  limits.prompt_tokens = BucketLimit{.rate_per_s = 100, .burst = 1000};
  EXPECT_TRUE(limiter.Take("a", limits, 50'000).allowed);
  EXPECT_FALSE(limiter.Take("a", limits, 50'000).allowed);
  clock.Set(TimePoint{} + milliseconds(10'000));
  EXPECT_TRUE(limiter.Take("a", limits, 50'000).allowed);
}

TEST(LocalRateLimiterTest, AWaitTooLongForMillisecondsSaturatesInsteadOfOverflowing) {
  ManualClock clock;
  LocalRateLimiter limiter(clock);
  // Both values pass the config's checks; refilling the burst takes 1e19 ms (> INT64_MAX).
  TenantLimits limits;
  limits.prompt_tokens = BucketLimit{.rate_per_s = 1e-4, .burst = 1e12};
  EXPECT_TRUE(limiter.Take("a", limits, 1e12).allowed);
  const LimitDecision refused = limiter.Take("a", limits, 1e12);
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.retry_after, kMaxRetryAfter);
  EXPECT_EQ(RetryAfterSeconds(refused.retry_after), (kMaxRetryAfter.count() + 999) / 1000);
  EXPECT_EQ(RetryAfterSeconds(milliseconds::max()), milliseconds::max().count() / 1000 + 1);
}

TEST(LocalRateLimiterTest, ConcurrencyCountsUntilReleased) {
  ManualClock clock;
  LocalRateLimiter limiter(clock);
  TenantLimits limits;
  limits.max_concurrent = 2;
  EXPECT_TRUE(limiter.AcquireConcurrent("a", limits));
  EXPECT_TRUE(limiter.AcquireConcurrent("a", limits));
  EXPECT_FALSE(limiter.AcquireConcurrent("a", limits));
  EXPECT_TRUE(limiter.AcquireConcurrent("b", limits));
  limiter.Release("a");
  EXPECT_EQ(limiter.in_flight("a"), 1);
  EXPECT_TRUE(limiter.AcquireConcurrent("a", limits));
}

}  // namespace
}  // namespace warmroute::gateway
