#include "sim/replica_spec.h"

#include "common/status.h"
#include "gtest/gtest.h"

namespace warmroute::sim {
namespace {

TEST(ReplicaSpecTest, ParsesHeterogeneousFleet) {
  absl::StatusOr<std::vector<ReplicaSpec>> fleet = ParseReplicaSpecs(
      {"llama-3.1-70b-tp4-h100:count=3", "llama-3.1-70b-tp8-h200:kv=2000000:count=2", "tiny"});
  ASSERT_TRUE(fleet.ok()) << fleet.status();
  ASSERT_EQ(fleet->size(), 6u);
  EXPECT_EQ((*fleet)[0].profile->name, "llama-3.1-70b-tp4-h100");
  EXPECT_EQ((*fleet)[0].kv_capacity_tokens, 460000);
  EXPECT_EQ((*fleet)[3].profile->name, "llama-3.1-70b-tp8-h200");
  EXPECT_EQ((*fleet)[4].kv_capacity_tokens, 2000000);
  EXPECT_EQ((*fleet)[5].profile->name, "tiny");
  EXPECT_EQ(DescribeFleet(*fleet),
            "3 x llama-3.1-70b-tp4-h100 (kv 460000 tokens) + 2 x llama-3.1-70b-tp8-h200 (kv "
            "2000000 tokens) + 1 x tiny (kv 65536 tokens)");
}

TEST(ReplicaSpecTest, RejectsBadSpecsNamingTheFlag) {
  for (const char* bad : {"nope", "tiny:count=0", "tiny:count=x", "tiny:kv=-5", "tiny:size=3",
                          "tiny:count", "tiny:count=3x"}) {
    absl::StatusOr<std::vector<ReplicaSpec>> fleet = ParseReplicaSpecs({bad});
    ASSERT_FALSE(fleet.ok()) << bad;
    EXPECT_EQ(fleet.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(ParamOf(fleet.status()), "replica-spec") << bad;
  }
  EXPECT_FALSE(ParseReplicaSpecs({}).ok());
}

TEST(ReplicaSpecTest, RejectsAKeyGivenTwice) {
  // Which count would win is a guess: the spec is refused instead.
  absl::StatusOr<std::vector<ReplicaSpec>> fleet = ParseReplicaSpecs({"tiny:count=2:count=3"});
  ASSERT_FALSE(fleet.ok());
  EXPECT_EQ(fleet.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(fleet.status().message().find("count given twice"), std::string::npos)
      << fleet.status().message();
  EXPECT_FALSE(ParseReplicaSpecs({"tiny:kv=100:count=2:kv=200"}).ok());
}

TEST(ReplicaSpecTest, UniformFleetUsesProfileCapacityByDefault) {
  absl::StatusOr<std::vector<ReplicaSpec>> fleet = UniformFleet("tiny", 4, 0);
  ASSERT_TRUE(fleet.ok());
  ASSERT_EQ(fleet->size(), 4u);
  EXPECT_EQ((*fleet)[3].kv_capacity_tokens, 65536);
  EXPECT_EQ((*UniformFleet("tiny", 2, 1000))[1].kv_capacity_tokens, 1000);
  EXPECT_EQ(ParamOf(UniformFleet("tiny", 0, 0).status()), "replicas");
  EXPECT_EQ(ParamOf(UniformFleet("gpt-9", 1, 0).status()), "profile");
  EXPECT_EQ(ParamOf(UniformFleet("tiny", 1, -1).status()), "kv-capacity-tokens");
}

}  // namespace
}  // namespace warmroute::sim
