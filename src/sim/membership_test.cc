#include "sim/membership.h"

#include <set>
#include <string>

#include "absl/strings/match.h"
#include "common/status.h"
#include "gtest/gtest.h"

namespace warmroute::sim {
namespace {

TEST(MembershipChangeTest, ParsesAddAndRemoveWithFractionalSeconds) {
  absl::StatusOr<MembershipChange> add = ParseMembershipChange("add@60", 8, /*seed=*/1);
  ASSERT_TRUE(add.ok()) << add.status();
  EXPECT_EQ(add->kind, MembershipChange::Kind::kAdd);
  EXPECT_EQ(add->at, std::chrono::seconds(60));
  EXPECT_LT(add->replica, 8u);

  absl::StatusOr<MembershipChange> remove = ParseMembershipChange("remove@1.5", 8, 1);
  ASSERT_TRUE(remove.ok()) << remove.status();
  EXPECT_EQ(remove->kind, MembershipChange::Kind::kRemove);
  EXPECT_EQ(remove->at, std::chrono::milliseconds(1500));
  EXPECT_EQ(DescribeMembershipChange(*remove),
            absl::StrCat("remove r", remove->replica, " at 1.5 s"));
}

TEST(MembershipChangeTest, ReplicaIsChosenBySeedAlone) {
  std::set<uint32_t> chosen;
  for (uint64_t seed = 1; seed <= 64; ++seed) {
    const uint32_t r = ChooseMembershipReplica(seed, 8);
    EXPECT_EQ(r, ChooseMembershipReplica(seed, 8));
    EXPECT_LT(r, 8u);
    EXPECT_EQ(ParseMembershipChange("add@5", 8, seed)->replica, r);
    EXPECT_EQ(ParseMembershipChange("remove@5", 8, seed)->replica, r);
    chosen.insert(r);
  }
  EXPECT_GE(chosen.size(), 6u);  // not stuck on one replica
}

TEST(MembershipChangeTest, RejectsBadSpecsNamingTheFlagAndTheProblem) {
  struct Case {
    const char* spec;
    size_t replicas;
    const char* says;
  };
  for (const Case& c :
       {Case{"foo", 8, "no '@'"}, Case{"grow@10", 8, "unknown change \"grow\""},
        Case{"add@", 8, "not a number"}, Case{"add@ten", 8, "not a number"},
        Case{"remove@0", 8, "positive"}, Case{"remove@-5", 8, "positive"},
        Case{"remove@inf", 8, "not a number"}, Case{"add@1e12", 8, "at most a year"},
        Case{"remove@10", 1, "at least 2 replicas"}, Case{"add@10", 1, "at least 2 replicas"}}) {
    absl::StatusOr<MembershipChange> change = ParseMembershipChange(c.spec, c.replicas, 1);
    ASSERT_FALSE(change.ok()) << c.spec;
    EXPECT_EQ(change.status().code(), absl::StatusCode::kInvalidArgument) << c.spec;
    EXPECT_TRUE(absl::StrContains(change.status().message(), "--membership")) << c.spec;
    EXPECT_TRUE(absl::StrContains(change.status().message(), c.says))
        << c.spec << ": " << change.status().message();
    EXPECT_EQ(ParamOf(change.status()), "membership");
  }
}

}  // namespace
}  // namespace warmroute::sim
