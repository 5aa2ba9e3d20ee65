#include "common/json_writer.h"

#include <limits>

#include "gtest/gtest.h"

namespace warmroute {
namespace {

TEST(JsonStringTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonString("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(JsonString("line\nnext\ttab\r"), R"("line\nnext\ttab\r")");
  EXPECT_EQ(JsonString(std::string_view("\x01\x1f\b\f", 4)), R"("\u0001\u001f\b\f")");
  EXPECT_EQ(JsonString(std::string_view("nul\0byte", 8)), R"("nul\u0000byte")");
}

TEST(JsonStringTest, KeepsValidUtf8) {
  EXPECT_EQ(JsonString("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
  EXPECT_EQ(JsonString("<|eot_id|>"), "\"<|eot_id|>\"");
}

TEST(JsonStringTest, ReplacesInvalidUtf8) {
  EXPECT_EQ(JsonString("a\xff"
                       "b"),
            R"("a\ufffdb")");
  EXPECT_EQ(JsonString("\xc3"), R"("\ufffd")");                                // truncated sequence
  EXPECT_EQ(JsonString("\xc0\xaf"), R"("\ufffd\ufffd")");                      // overlong
  EXPECT_EQ(JsonString("\xed\xa0\x80"), R"("\ufffd\ufffd\ufffd")");            // surrogate
  EXPECT_EQ(JsonString("\xf4\x90\x80\x80"), R"("\ufffd\ufffd\ufffd\ufffd")");  // > U+10FFFF
}

TEST(JsonStringTest, AppendsToExistingText) {
  std::string out = "data: ";
  AppendJsonString(&out, "x");
  EXPECT_EQ(out, "data: \"x\"");
}

TEST(JsonWriterTest, PlacesCommasAndColonsInNestedValues) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("id").String("cmpl-1");
  w.Key("n").Int(-3);
  w.Key("u").Uint(18446744073709551615ull);
  w.Key("choices").BeginArray();
  w.BeginObject().Key("index").Int(0).Key("text").String("hi").EndObject();
  w.BeginObject().Key("index").Int(1).EndObject();
  w.EndArray();
  w.Key("empty").BeginArray().EndArray();
  w.Key("obj").BeginObject().EndObject();
  w.Key("ok").Bool(true);
  w.Key("none").Null();
  w.Key("raw").Raw("[1,2]");
  w.EndObject();
  EXPECT_EQ(out,
            R"({"id":"cmpl-1","n":-3,"u":18446744073709551615,"choices":[{"index":0,"text":"hi"},)"
            R"({"index":1}],"empty":[],"obj":{},"ok":true,"none":null,"raw":[1,2]})");
}

TEST(JsonWriterTest, WritesDoublesRoundTripAndNonFiniteAsNull) {
  std::string out;
  JsonWriter w(&out);
  w.BeginArray().Double(0.25).Double(1e-7).Double(std::numeric_limits<double>::infinity());
  w.Double(std::numeric_limits<double>::quiet_NaN()).EndArray();
  EXPECT_EQ(out, "[0.25,1e-07,null,null]");
}

TEST(JsonWriterTest, WritesFloatsAsTheShortestTextOfTheFloat) {
  std::string out;
  JsonWriter w(&out);
  w.BeginArray().Float(0.1f).Float(2.5f).Float(std::numeric_limits<float>::infinity()).EndArray();
  EXPECT_EQ(out, "[0.1,2.5,null]");  // not 0.10000000149011612, the double of 0.1f
}

TEST(JsonWriterTest, EscapesKeys) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject().Key("a\"b").Int(1).EndObject();
  EXPECT_EQ(out, R"({"a\"b":1})");
}

}  // namespace
}  // namespace warmroute
