#include "core/routing/policy_registry.h"

#include "gtest/gtest.h"

namespace warmroute::routing {
namespace {

TEST(PolicyRegistryTest, EveryNameBuildsAPolicyOfThatName) {
  std::vector<std::string> names = PolicyNames();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "warmroute");
  EXPECT_EQ(names.front(), kDefaultPolicy);
  for (const std::string& name : names) {
    absl::StatusOr<std::unique_ptr<Policy>> policy = MakePolicy(name, {});
    ASSERT_TRUE(policy.ok()) << name << ": " << policy.status();
    EXPECT_EQ((*policy)->name(), name);
  }
  for (std::string expected :
       {"round_robin", "random", "least_request", "power_of_two", "consistent_hash",
        "sglang_cache_aware", "dynamo_kv", "llmd_weighted", "preble"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
}

TEST(PolicyRegistryTest, UnknownPolicyIsNotFoundAndListsTheNames) {
  absl::Status status = MakePolicy("prefix_aware", {}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(status.message().find("prefix_aware"), std::string::npos);
  EXPECT_NE(status.message().find("consistent_hash"), std::string::npos);
}

TEST(PolicyRegistryTest, UnknownParameterNamesItAndThePolicy) {
  absl::Status status = MakePolicy("consistent_hash", {{"balance_factr", 1.5}}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("balance_factr"), std::string::npos);
  EXPECT_NE(status.message().find("consistent_hash"), std::string::npos);
  status = MakePolicy("round_robin", {{"x", 1}}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
}

TEST(PolicyRegistryTest, OverridesAreValidated) {
  EXPECT_TRUE(MakePolicy("consistent_hash", {{"balance_factor", 1.5}}).ok());
  absl::Status status = MakePolicy("consistent_hash", {{"balance_factor", 0.5}}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("balance_factor"), std::string::npos);
  EXPECT_TRUE(MakePolicy("sglang_cache_aware", {{"cache_threshold", 0.3},
                                                {"balance_abs_threshold", 64},
                                                {"balance_rel_threshold", 1.5}})
                  .ok());
  EXPECT_FALSE(MakePolicy("warmroute", {{"slack_fraction", -1}}).ok());
  EXPECT_TRUE(MakePolicy("warmroute", {{"home_blocks", 32}, {"max_homes", 2}}).ok());
}

}  // namespace
}  // namespace warmroute::routing
