#include "net/json_object_edit.h"

#include <gtest/gtest.h>

namespace warmroute::net {
namespace {

TEST(JsonObjectEditTest, ReplacesAnExistingMemberKeepingEveryOtherByte) {
  EXPECT_EQ(SetTopLevelMember(R"({"model": "m", "cache_salt" : "mine", "x":[1,{"y":2}]})",
                              "cache_salt", R"("ours")")
                .value(),
            R"({"model": "m", "cache_salt" : "ours", "x":[1,{"y":2}]})");
}

TEST(JsonObjectEditTest, InsertsAMissingMemberFirst) {
  EXPECT_EQ(SetTopLevelMember(R"({"model":"m"})", "cache_salt", R"("s")").value(),
            R"({"cache_salt":"s","model":"m"})");
  EXPECT_EQ(SetTopLevelMember(" { } ", "k", "1").value(), R"( {"k":1 } )");
}

TEST(JsonObjectEditTest, IgnoresNestedMembersAndStringsThatLookLikeTheKey) {
  const std::string body =
      R"({"tools":[{"parameters":{"cache_salt":{"type":"string"}}}],)"
      R"("messages":[{"content":"say \"cache_salt\": 1"}]})";
  EXPECT_EQ(SetTopLevelMember(body, "cache_salt", R"("s")").value(),
            R"({"cache_salt":"s",)" + body.substr(1));
}

TEST(JsonObjectEditTest, MatchesEscapedKeysAndEveryDuplicate) {
  EXPECT_EQ(
      SetTopLevelMember(R"({"cache\u005fsalt":"a","cache_salt":null,"c":1})", "cache_salt", "7")
          .value(),
      R"({"cache\u005fsalt":7,"cache_salt":7,"c":1})");
}

TEST(JsonObjectEditTest, RefusesWhatIsNotAnObject) {
  EXPECT_FALSE(SetTopLevelMember("[1,2]", "k", "1").ok());
  EXPECT_FALSE(SetTopLevelMember(R"({"a":)", "k", "1").ok());
  EXPECT_FALSE(SetTopLevelMember(R"({"a":"\q"})", "k", "1").ok());
  EXPECT_FALSE(SetTopLevelMember(R"({"a" 1})", "k", "1").ok());
  EXPECT_FALSE(InsertTopLevelMember("nope", "k", "1").ok());
}

}  // namespace
}  // namespace warmroute::net
