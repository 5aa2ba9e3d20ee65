#include "core/template/json_value.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::jinja {
namespace {

std::string Dump(std::string_view json, const JsonOptions& options = {}) {
  absl::StatusOr<Value> v = ValueFromJson(json);
  EXPECT_TRUE(v.ok()) << v.status();
  absl::StatusOr<std::string> out = ToJson(*v, options, 64);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : "";
}

TEST(JsonValueTest, LoadsKeepKeyOrderAndNumberKinds) {
  absl::StatusOr<Value> v = ValueFromJson(R"({"b": 1, "a": 1.0, "c": [true, null]})");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->dict().entries()[0].first, "b");
  EXPECT_TRUE(v->dict().Find("b")->is_int());
  EXPECT_TRUE(v->dict().Find("a")->is_float());
  EXPECT_FALSE(ValueFromJson("{").ok());
  EXPECT_FALSE(ValueFromJson("18446744073709551615").ok());
}

TEST(JsonValueTest, DumpsAsPythonsJsonDumps) {
  EXPECT_EQ(Dump(R"({"b":[1,2.5,"é\u2028\n\"",null,true],"a":{}})"),
            "{\"b\": [1, 2.5, \"é\u2028\\n\\\"\", null, true], \"a\": {}}");
  JsonOptions indent;
  indent.indent = 2;
  EXPECT_EQ(Dump(R"({"a":[1,{"b":[]}]})", indent),
            "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    }\n  ]\n}");
  JsonOptions ascii;
  ascii.ensure_ascii = true;
  EXPECT_EQ(Dump(R"(["é👍\u007f"])", ascii), "[\"\\u00e9\\ud83d\\udc4d\\u007f\"]");
  JsonOptions compact;
  compact.item_separator = ",";
  compact.key_separator = ":";
  compact.sort_keys = true;
  EXPECT_EQ(Dump(R"({"b":1,"a":[1,2]})", compact), "{\"a\":[1,2],\"b\":1}");
  EXPECT_EQ(Dump("1e100"), "1e+100");
}

TEST(JsonValueTest, RefusesWhatJsonCannotHold) {
  EXPECT_THAT(ToJson(Value(), {}, 64).status().message(),
              ::testing::HasSubstr("Object of type Undefined is not JSON serializable"));
  absl::StatusOr<Value> deep = ValueFromJson("[[[[[1]]]]]");
  ASSERT_TRUE(deep.ok());
  EXPECT_FALSE(ToJson(*deep, {}, 3).ok());
}

}  // namespace
}  // namespace warmroute::jinja
