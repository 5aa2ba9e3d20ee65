// The parts of the Redis rate store that need no Redis: keys, script arguments, reply decoding
// and validation. The script itself runs against a real redis-server in
// tests/integration/redis_rate_store_test.cc.
#include "gateway/tenancy/redis_rate_store.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "net/run_task.h"

namespace warmroute::gateway {
namespace {

using net::RespValue;

RespValue Integers(std::initializer_list<int64_t> values) {
  RespValue array;
  array.kind = RespValue::Kind::kArray;
  for (int64_t v : values) {
    RespValue e;
    e.kind = RespValue::Kind::kInteger;
    e.integer = v;
    array.elements.push_back(e);
  }
  return array;
}

TEST(RedisRateStoreKeysTest, PutsTheTenantInAHashTag) {
  EXPECT_EQ(internal::TakeKeys("warmroute:rl:", "acme"),
            (std::vector<std::string>{"warmroute:rl:{acme}:req", "warmroute:rl:{acme}:tok"}));
}

TEST(RedisRateStoreArgsTest, SendsRateBurstAndCostPerBucket) {
  TenantLimits limits;
  limits.requests = BucketLimit{50, 10};
  limits.prompt_tokens = BucketLimit{1234.5, 100000};
  EXPECT_EQ(internal::TakeArgs(limits, 812.25),
            (std::vector<std::string>{"50", "10", "1", "1234.5", "100000", "812.25"}));
}

TEST(RedisRateStoreArgsTest, MarksAnUnlimitedBucketWithRateZeroAndClampsNegativeCosts) {
  TenantLimits limits;
  limits.prompt_tokens = BucketLimit{0.001, 1};
  EXPECT_EQ(internal::TakeArgs(limits, -5),
            (std::vector<std::string>{"0", "0", "0", "0.001", "1", "0"}));
}

TEST(RedisRateStoreReplyTest, DecodesAllowedAndRefused) {
  absl::StatusOr<LimitDecision> d = internal::DecodeTakeReply(Integers({1, 0, 0}));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->allowed);
  d = internal::DecodeTakeReply(Integers({0, 1250, 1}));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->allowed);
  EXPECT_EQ(d->retry_after, std::chrono::milliseconds(1250));
  EXPECT_EQ(d->limit, "requests");
  d = internal::DecodeTakeReply(Integers({0, 7, 2}));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->limit, "prompt_tokens");
}

TEST(RedisRateStoreReplyTest, RejectsAnythingElse) {
  RespValue text;
  text.kind = RespValue::Kind::kBulkString;
  text.text = "1";
  for (const RespValue& bad :
       {Integers({1, 0}), Integers({1, 0, 0, 0}), Integers({0, 5, 3}), Integers({0, -1, 1}),
        Integers({2, 0, 0}), Integers({1, 0, 1}), text, RespValue{}}) {
    EXPECT_EQ(internal::DecodeTakeReply(bad).status().code(), absl::StatusCode::kInternal)
        << net::DescribeResp(bad);
  }
}

TEST(RedisRateStoreValidateTest, RequiresPositiveRatesAndABurstOfAtLeastOne) {
  TenantLimits limits;
  EXPECT_TRUE(internal::ValidateBuckets(limits).ok());
  limits.requests = BucketLimit{1, 1};
  EXPECT_TRUE(internal::ValidateBuckets(limits).ok());
  for (BucketLimit bad : {BucketLimit{0, 10}, BucketLimit{-1, 10}, BucketLimit{5, 0.5},
                          BucketLimit{std::nan(""), 10}, BucketLimit{5, INFINITY}}) {
    limits.prompt_tokens = bad;
    EXPECT_EQ(internal::ValidateBuckets(limits).code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(RedisRateStoreTakeTest, AnswersWithoutRedisWhenNothingNeedsIt) {
  boost::asio::io_context io;
  ManualClock clock;
  RedisRateStoreOptions options;
  options.endpoint.port = 1;  // never contacted below
  RedisRateStore store(io.get_executor(), options, clock);
  TenantLimits unlimited;
  unlimited.max_concurrent = 3;  // per gateway: not the store's business
  absl::StatusOr<LimitDecision> d = net::RunTask(io, store.Take("acme", unlimited, 100));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->allowed);
  TenantLimits bad;
  bad.requests = BucketLimit{0, 1};
  d = net::RunTask(io, store.Take("acme", bad, 100));
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(store.connected());
  EXPECT_EQ(store.failures(), 0);
}

}  // namespace
}  // namespace warmroute::gateway
