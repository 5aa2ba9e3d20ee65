#include "gateway/fleet/model_list.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::gateway {
namespace {

using ::testing::ElementsAre;

TEST(ParseModelListTest, ReadsTheIdsInOrder) {
  absl::StatusOr<ModelList> list =
      ParseModelList(R"({"object":"list","data":[{"id":"tiny","object":"model"},{"id":"other"}]})");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_THAT(list->ids, ElementsAre("tiny", "other"));
  EXPECT_EQ(list->ignored, 0);
}

TEST(ParseModelListTest, IgnoresEmptyAndNonStringIds) {
  absl::StatusOr<ModelList> list =
      ParseModelList(R"({"data":[{"id":5},{"id":null},{},7,{"id":""},{"id":"tiny"}]})");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_THAT(list->ids, ElementsAre("tiny"));
  EXPECT_EQ(list->ignored, 5);
}

TEST(ParseModelListTest, OnlyUnusableIdsGiveAnEmptyList) {
  absl::StatusOr<ModelList> list = ParseModelList(R"({"data":[{"id":""}]})");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE(list->ids.empty());
  EXPECT_EQ(list->ignored, 1);
}

TEST(ParseModelListTest, RefusesWhatIsNoModelList) {
  EXPECT_FALSE(ParseModelList("{{{ not json").ok());
  EXPECT_FALSE(ParseModelList(R"({"data":{"id":"tiny"}})").ok());
  EXPECT_FALSE(ParseModelList("[]").ok());
}

}  // namespace
}  // namespace warmroute::gateway
