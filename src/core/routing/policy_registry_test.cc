#include "core/routing/policy_registry.h"

#include <cmath>
#include <string>

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
        "sglang_cache_aware", "dynamo_kv", "llmd_weighted", "llmd_precise", "preble"}) {
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

std::string ErrorOf(std::string_view policy, const PolicyParams& params) {
  return std::string(MakePolicy(policy, params).status().message());
}

TEST(PolicyRegistryTest, IntegerParametersMustBeWholeNumbersInRange) {
  // A fraction was truncated, and a huge value cast to int (undefined) then reported as "must be
  // at least 1": the message now gives the range and the value as given.
  EXPECT_EQ(ErrorOf("consistent_hash", {{"virtual_nodes", 1.5}}),
            "policy consistent_hash: parameter virtual_nodes must be a whole number in [1, "
            "10000], got 1.5");
  EXPECT_EQ(ErrorOf("warmroute", {{"max_homes", 1e300}}),
            "policy warmroute: parameter max_homes must be a whole number in [1, 100000], got "
            "1e+300");
  EXPECT_NE(ErrorOf("warmroute", {{"home_blocks", 0}}).find("in [1, 1000000], got 0"),
            std::string::npos);
  EXPECT_TRUE(MakePolicy("warmroute", {{"useful_match_blocks", 0}}).ok());
}

TEST(PolicyRegistryTest, ParametersMustBeFinite) {
  EXPECT_EQ(ErrorOf("warmroute", {{"balance_factor", INFINITY}}),
            "policy warmroute: parameter balance_factor must be a finite number, got inf");
  EXPECT_NE(ErrorOf("consistent_hash", {{"balance_factor", NAN}}).find("finite"),
            std::string::npos);
}

}  // namespace
}  // namespace warmroute::routing
