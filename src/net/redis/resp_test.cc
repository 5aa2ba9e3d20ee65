#include "net/redis/resp.h"

#include <gtest/gtest.h>

#include <string>

namespace warmroute::net {
namespace {

using Kind = RespValue::Kind;

// Parses `input`, which must hold exactly one whole reply.
RespValue ParseWhole(std::string_view input) {
  RespValue value;
  absl::StatusOr<size_t> used = ParseResp(input, value);
  EXPECT_TRUE(used.ok()) << used.status();
  EXPECT_EQ(used.value_or(0), input.size());
  return value;
}

absl::Status ParseError(std::string_view input) {
  RespValue value;
  absl::StatusOr<size_t> used = ParseResp(input, value);
  return used.ok() ? absl::OkStatus() : used.status();
}

TEST(RespParseTest, ReadsEveryScalarType) {
  EXPECT_EQ(ParseWhole("+OK\r\n").kind, Kind::kSimpleString);
  EXPECT_EQ(ParseWhole("+OK\r\n").text, "OK");
  EXPECT_EQ(ParseWhole(":42\r\n").integer, 42);
  EXPECT_EQ(ParseWhole(":-7\r\n").integer, -7);
  EXPECT_EQ(ParseWhole(":9223372036854775807\r\n").integer, INT64_MAX);
  EXPECT_EQ(ParseWhole(":-9223372036854775808\r\n").integer, INT64_MIN);
  const RespValue bulk = ParseWhole("$5\r\nhe\r\no\r\n");  // binary-safe: CRLF inside
  EXPECT_EQ(bulk.kind, Kind::kBulkString);
  EXPECT_EQ(bulk.text, "he\r\no");
  EXPECT_EQ(ParseWhole("$0\r\n\r\n").text, "");
  EXPECT_EQ(ParseWhole("$-1\r\n").kind, Kind::kNull);
  EXPECT_EQ(ParseWhole("*-1\r\n").kind, Kind::kNull);
}

TEST(RespParseTest, ReadsErrorRepliesAsValuesWithTheirCode) {
  const RespValue error = ParseWhole("-NOSCRIPT No matching script. Please use EVAL.\r\n");
  EXPECT_TRUE(error.is_error());
  EXPECT_EQ(error.error_code(), "NOSCRIPT");
  EXPECT_EQ(error.text, "NOSCRIPT No matching script. Please use EVAL.");
  EXPECT_EQ(ParseWhole("-ERR\r\n").error_code(), "ERR");
  EXPECT_EQ(ParseWhole("+NOSCRIPT\r\n").error_code(), "");
}

TEST(RespParseTest, ReadsNestedArrays) {
  const RespValue v = ParseWhole("*3\r\n:1\r\n*2\r\n$1\r\na\r\n$-1\r\n*0\r\n");
  ASSERT_EQ(v.kind, Kind::kArray);
  ASSERT_EQ(v.elements.size(), 3u);
  EXPECT_EQ(v.elements[0].integer, 1);
  ASSERT_EQ(v.elements[1].kind, Kind::kArray);
  ASSERT_EQ(v.elements[1].elements.size(), 2u);
  EXPECT_EQ(v.elements[1].elements[0].text, "a");
  EXPECT_EQ(v.elements[1].elements[1].kind, Kind::kNull);
  EXPECT_EQ(v.elements[2].kind, Kind::kArray);
  EXPECT_TRUE(v.elements[2].elements.empty());
}

TEST(RespParseTest, EveryProperPrefixAsksForMoreInput) {
  const std::string whole = "*2\r\n$11\r\nhello world\r\n*2\r\n:-12\r\n+OK\r\n";
  for (size_t n = 0; n < whole.size(); ++n) {
    RespValue value;
    absl::StatusOr<size_t> used = ParseResp(std::string_view(whole).substr(0, n), value);
    ASSERT_TRUE(used.ok()) << "prefix " << n << ": " << used.status();
    EXPECT_EQ(*used, 0u) << "prefix " << n;
  }
  EXPECT_EQ(ParseWhole(whole).elements[1].elements[0].integer, -12);
}

TEST(RespParseTest, ReportsOnlyTheFirstOfSeveralReplies) {
  const std::string two = ":1\r\n+second\r\n";
  RespValue value;
  absl::StatusOr<size_t> used = ParseResp(two, value);
  ASSERT_TRUE(used.ok());
  EXPECT_EQ(*used, 4u);
  EXPECT_EQ(value.integer, 1);
  used = ParseResp(std::string_view(two).substr(*used), value);
  ASSERT_TRUE(used.ok());
  EXPECT_EQ(value.text, "second");
}

TEST(RespParseTest, RejectsMalformedInputWithAStatus) {
  for (std::string_view bad : {
           std::string_view("?x\r\n"),                     // unknown type
           std::string_view("%1\r\n"),                     // RESP3 map
           std::string_view("\r\n"),                       // empty line
           std::string_view(":12a\r\n"),                   // not a number
           std::string_view(":\r\n"),                      // no digits
           std::string_view(":-\r\n"),                     // sign only
           std::string_view(":99999999999999999999\r\n"),  // overflow
           std::string_view(":9223372036854775808\r\n"),   // INT64_MAX + 1
           std::string_view("$-2\r\n"),                    // negative length
           std::string_view("$3\r\nabcd\r\n"),             // bulk longer than announced
           std::string_view("$99999999999\r\n"),           // bulk beyond the limit
           std::string_view("*-5\r\n"),                    // negative count
           std::string_view("*99999999\r\n"),              // array beyond the limit
           std::string_view("+OK\n"),                      // LF without CR
           std::string_view("+OK\rX\n"),                   // CR without LF
           std::string_view("*1\r\n!\r\n"),                // bad element
       }) {
    EXPECT_EQ(ParseError(bad).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(RespParseTest, RejectsNestingBeyondTheLimit) {
  std::string deep;
  for (int i = 0; i < kMaxRespDepth + 1; ++i) deep += "*1\r\n";
  deep += ":1\r\n";
  EXPECT_EQ(ParseError(deep).code(), absl::StatusCode::kInvalidArgument);
  std::string ok;
  for (int i = 0; i < kMaxRespDepth - 1; ++i) ok += "*1\r\n";
  ok += ":1\r\n";
  EXPECT_TRUE(ParseError(ok).ok());
}

TEST(RespParseTest, RejectsAnEndlessLineInsteadOfBufferingIt) {
  const std::string endless = "+" + std::string(kMaxRespLineBytes + 1, 'a');
  EXPECT_EQ(ParseError(endless).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ParseError("+" + std::string(100, 'a')).ok());  // short partial line: wait
}

TEST(RespParseTest, NeverCrashesOnArbitraryBytes) {
  // A fixed pseudo-random byte soup built from RESP's own characters.
  const std::string alphabet = "*$:+-\r\n0123456789-1a";
  uint32_t x = 12345;
  for (int round = 0; round < 20000; ++round) {
    std::string input;
    const int length = round % 40;
    for (int i = 0; i < length; ++i) {
      x = x * 1664525u + 1013904223u;
      input += alphabet[(x >> 16) % alphabet.size()];
    }
    RespValue value;
    absl::StatusOr<size_t> used = ParseResp(input, value);
    if (used.ok()) {
      EXPECT_LE(*used, input.size());
    }
  }
}

TEST(RespEncodeTest, WritesCommandsAsArraysOfBulkStrings) {
  std::string out;
  AppendRespCommand(out, {"EVALSHA", "abc", "1", "k\r\ney", ""});
  EXPECT_EQ(out, "*5\r\n$7\r\nEVALSHA\r\n$3\r\nabc\r\n$1\r\n1\r\n$5\r\nk\r\ney\r\n$0\r\n\r\n");
  // What we encode, we parse back.
  const RespValue back = ParseWhole(out);
  ASSERT_EQ(back.elements.size(), 5u);
  EXPECT_EQ(back.elements[3].text, "k\r\ney");
}

TEST(RespDescribeTest, RendersRepliesShortly) {
  EXPECT_EQ(DescribeResp(ParseWhole("*3\r\n:1\r\n$2\r\nab\r\n$-1\r\n")), "[:1, \"ab\", (nil)]");
  EXPECT_EQ(DescribeResp(ParseWhole("-ERR bad\r\n")), "-ERR bad");
}

}  // namespace
}  // namespace warmroute::net
