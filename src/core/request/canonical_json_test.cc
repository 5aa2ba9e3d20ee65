#include "core/request/canonical_json.h"

#include "gtest/gtest.h"

namespace warmroute::request {
namespace {

TEST(CanonicalJsonTest, SortsMembersAtEveryDepth) {
  EXPECT_EQ(CanonicalJson(R"({"b":1,"a":{"d":[{"y":1,"x":2}],"c":null}})"),
            R"({"a":{"c":null,"d":[{"x":2,"y":1}]},"b":1})");
}

TEST(CanonicalJsonTest, KeepsArrayOrderAndDropsWhitespace) {
  EXPECT_EQ(CanonicalJson(R"( [ {"n": "z"} , {"n": "a"}, true, 1.5, "\u00e9" ] )"),
            "[{\"n\":\"z\"},{\"n\":\"a\"},true,1.5,\"\xc3\xa9\"]");
}

TEST(CanonicalJsonTest, InvalidJsonIsEmpty) {
  EXPECT_EQ(CanonicalJson("{nope"), "");
  EXPECT_EQ(CanonicalJson(""), "");
}

}  // namespace
}  // namespace warmroute::request
