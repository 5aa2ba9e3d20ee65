#include "sim/prewarm_spec.h"

#include <chrono>

#include "gtest/gtest.h"

namespace warmroute::sim {
namespace {

TEST(PrewarmSpecTest, ParsesTheGivenKeysAndKeepsTheOtherDefaults) {
  absl::StatusOr<routing::PrewarmOptions> o =
      ParsePrewarmSpec("max_prefixes=1024,max_tokens_per_s=5000,half_life_s=30");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->max_prefixes, 1024u);
  EXPECT_EQ(o->max_tokens_per_s, 5000);
  EXPECT_EQ(o->half_life, std::chrono::seconds(30));
  EXPECT_EQ(o->max_in_flight, routing::PrewarmOptions{}.max_in_flight);
  EXPECT_TRUE(ParsePrewarmSpec("").ok());
}

TEST(PrewarmSpecTest, RejectsBadInputWithTheFlagInTheMessage) {
  for (const char* spec : {"max_prefixes", "nope=1", "max_tokens_per_s=0", "max_in_flight=0",
                           "max_prefixes=abc", "half_life_s=-1", "max_prefixes=2000000"}) {
    absl::StatusOr<routing::PrewarmOptions> o = ParsePrewarmSpec(spec);
    ASSERT_FALSE(o.ok()) << spec;
    EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(o.status().message().find("--prewarm"), std::string::npos) << o.status();
  }
}

}  // namespace
}  // namespace warmroute::sim
