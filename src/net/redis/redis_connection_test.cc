#include "net/redis/redis_connection.h"

#include <gtest/gtest.h>

namespace warmroute::net {
namespace {

TEST(ParseRedisUrlTest, ReadsHostAndPort) {
  absl::StatusOr<RedisEndpoint> e = ParseRedisUrl("redis://10.0.0.7:6380");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->host, "10.0.0.7");
  EXPECT_EQ(e->port, 6380);
  e = ParseRedisUrl("redis://redis.internal/");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->host, "redis.internal");
  EXPECT_EQ(e->port, 6379);
  e = ParseRedisUrl("redis://[::1]:7000");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->port, 7000);
}

TEST(ParseRedisUrlTest, RejectsWhatItCannotHonour) {
  for (std::string_view bad :
       {"", "127.0.0.1:6379", "http://h:1", "rediss://h:6379", "redis://", "redis://:6379",
        "redis://h:0", "redis://h:65536", "redis://h:x", "redis://h:", "redis://u:p@h:6379",
        "redis://h:6379/2", "redis://[::1"}) {
    absl::StatusOr<RedisEndpoint> e = ParseRedisUrl(bad);
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace warmroute::net
