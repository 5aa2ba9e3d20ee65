#include "net/usage_tap.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace warmroute::net {
namespace {

constexpr std::string_view kChunk1 =
    "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}],"
    "\"usage\":null}\n\n";
constexpr std::string_view kChunk2 =
    "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" there\"},"
    "\"finish_reason\":\"length\"}]}\n\n";
constexpr std::string_view kUsage =
    "data: {\"id\":\"c\",\"choices\":[],\"usage\": {\"prompt_tokens\":3000,"
    "\"completion_tokens\":2,\"total_tokens\":3002,"
    "\"prompt_tokens_details\":{\"cached_tokens\":2992}}}\n\n";
constexpr std::string_view kDone = "data: [DONE]\n\n";

std::string Whole() {
  return std::string(kChunk1) + std::string(kChunk2) + std::string(kUsage) + std::string(kDone);
}

// Feeds `body` cut into pieces of `size` bytes; returns what was passed on.
std::string Relay(SseUsageTap& tap, std::string_view body, size_t size) {
  std::string out;
  for (size_t at = 0; at < body.size(); at += size) out += tap.Feed(body.substr(at, size));
  out += tap.Finish();
  return out;
}

TEST(ReadUsageTest, ReadsPromptCompletionAndCachedTokens) {
  auto usage = ReadUsage(
      R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,)"
      R"("prompt_tokens_details":{"cached_tokens":8}}})");
  ASSERT_TRUE(usage.has_value());
  EXPECT_EQ(usage->prompt_tokens, 12);
  EXPECT_EQ(usage->completion_tokens, 5);
  EXPECT_EQ(usage->cached_tokens, 8);
}

TEST(ReadUsageTest, NullOrMissingUsageOrDetailsAreAbsent) {
  EXPECT_FALSE(ReadUsage(R"({"usage":null})").has_value());
  EXPECT_FALSE(ReadUsage(R"({"choices":[]})").has_value());
  EXPECT_FALSE(ReadUsage("not json {\"usage\":{").has_value());
  auto usage = ReadUsage(R"({"usage":{"prompt_tokens":4,"prompt_tokens_details":null}})");
  ASSERT_TRUE(usage.has_value());
  EXPECT_FALSE(usage->cached_tokens.has_value());
}

// An engine's counts are not trusted: the router sums and subtracts them (a misbehaving engine's
// -2^63 once overflowed there).
TEST(ReadUsageTest, CountsOutOfRangeAreNotReported) {
  for (const char* bad : {"-1", "-9223372036854775808", "9223372036854775807", "2147483648",
                          "18446744073709551615", "1.5", "\"8\""}) {
    const std::string json =
        absl::StrCat(R"({"usage":{"prompt_tokens":)", bad, R"(,"completion_tokens":)", bad,
                     R"(,"prompt_tokens_details":{"cached_tokens":)", bad, "}}}");
    auto usage = ReadUsage(json);
    ASSERT_TRUE(usage.has_value()) << json;
    EXPECT_EQ(usage->prompt_tokens, 0) << json;
    EXPECT_EQ(usage->completion_tokens, 0) << json;
    EXPECT_FALSE(usage->cached_tokens.has_value()) << json;
  }
  auto edge = ReadUsage(
      R"({"usage":{"prompt_tokens":2147483647,"prompt_tokens_details":{"cached_tokens":0}}})");
  ASSERT_TRUE(edge.has_value());
  EXPECT_EQ(edge->prompt_tokens, kMaxUsageTokens);
  EXPECT_EQ(edge->cached_tokens, 0);
}

TEST(ReadUsageTest, OnlyTheTopLevelUsageCountsWhereverItIsAndInAnyFieldOrder) {
  // "usage": { inside a string, and a nested "usage" object, before the real one.
  auto usage = ReadUsage(
      R"({"choices":[{"message":{"content":"say \"usage\": {now"}}],"x":{"usage":{"prompt_tokens":99}},)"
      R"("usage":{"prompt_tokens_details":{"cached_tokens":2},"completion_tokens":1,"prompt_tokens":7}})");
  ASSERT_TRUE(usage.has_value());
  EXPECT_EQ(usage->prompt_tokens, 7);
  EXPECT_EQ(usage->completion_tokens, 1);
  EXPECT_EQ(usage->cached_tokens, 2);
  // Only in a string or nested: no usage.
  EXPECT_FALSE(ReadUsage(R"({"content":"\"usage\": {","choices":[]})").has_value());
  EXPECT_FALSE(ReadUsage(R"({"x":{"usage":{"prompt_tokens":1}}})").has_value());
}

TEST(SseUsageTapTest, PassesEverythingThroughAndReadsUsageWhenTheClientAskedForIt) {
  for (size_t size : {1u, 7u, 64u, 4096u}) {
    SseUsageTap tap(/*drop_usage_event=*/false);
    EXPECT_EQ(Relay(tap, Whole(), size), Whole()) << "piece size " << size;
    ASSERT_TRUE(tap.usage().has_value());
    EXPECT_EQ(tap.usage()->cached_tokens, 2992);
    EXPECT_EQ(tap.usage()->prompt_tokens, 3000);
    EXPECT_EQ(tap.events(), 4);
  }
}

TEST(SseUsageTapTest, DropsOnlyTheUsageChunkTheGatewayAdded) {
  const std::string expected = std::string(kChunk1) + std::string(kChunk2) + std::string(kDone);
  for (size_t size : {1u, 5u, 100u, 4096u}) {
    SseUsageTap tap(/*drop_usage_event=*/true);
    EXPECT_EQ(Relay(tap, Whole(), size), expected) << "piece size " << size;
    ASSERT_TRUE(tap.usage().has_value());
    EXPECT_EQ(tap.usage()->cached_tokens, 2992);
  }
}

TEST(SseUsageTapTest, KeepsAChunkThatHasBothChoicesAndUsage) {
  // continuous_usage_stats: every chunk carries usage and choices; none is dropped.
  const std::string body =
      "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":1}}\n\n";
  SseUsageTap tap(/*drop_usage_event=*/true);
  EXPECT_EQ(Relay(tap, body, 4096), body);
}

TEST(SseUsageTapTest, ForwardsCompleteEventsAtOnceAndHoldsOnlyAnIncompleteTail) {
  SseUsageTap tap(/*drop_usage_event=*/false);
  const std::string piece = std::string(kChunk1) + "data: {\"partial";
  EXPECT_EQ(tap.Feed(piece), kChunk1);
  EXPECT_EQ(tap.Feed("\":1}\n\n"), "data: {\"partial\":1}\n\n");
  EXPECT_EQ(tap.Feed("data: unterminated"), "");
  EXPECT_EQ(tap.Finish(), "data: unterminated");
}

TEST(SseUsageTapTest, HandlesCrLfEventTerminators) {
  const std::string body = "data: {\"choices\":[]}\r\n\r\ndata: [DONE]\r\n\r\n";
  SseUsageTap tap(/*drop_usage_event=*/true);
  EXPECT_EQ(Relay(tap, body, 3), body);
  EXPECT_EQ(tap.events(), 2);
}

TEST(ReadUsageTest, ResponsesApiNamesItsCountsInputAndOutput) {
  const std::optional<Usage> usage = ReadUsage(
      R"({"id":"resp_1","object":"response","usage":{"input_tokens":3050,)"
      R"("input_tokens_details":{"cached_tokens":2992},"output_tokens":8,"total_tokens":3058}})",
      UsageFormat::kResponses);
  ASSERT_TRUE(usage.has_value());
  EXPECT_EQ(usage->prompt_tokens, 3050);
  EXPECT_EQ(usage->completion_tokens, 8);
  EXPECT_EQ(usage->cached_tokens, 2992);
  // The chat names are not read for a Responses body, nor these for a chat one.
  EXPECT_EQ(ReadUsage(R"({"usage":{"input_tokens":5}})", UsageFormat::kChat)->prompt_tokens, 0);
}

TEST(ReadUsageTest, MessagesApiPromptIsItsThreeInputCounts) {
  const std::optional<Usage> usage = ReadUsage(
      R"({"type":"message","usage":{"input_tokens":58,"cache_read_input_tokens":2992,)"
      R"("cache_creation_input_tokens":0,"output_tokens":8}})",
      UsageFormat::kMessages);
  ASSERT_TRUE(usage.has_value());
  EXPECT_EQ(usage->prompt_tokens, 3050);
  EXPECT_EQ(usage->cached_tokens, 2992);
  EXPECT_EQ(usage->completion_tokens, 8);
}

// Found by fuzzing (tests/fuzz, sse_usage): a malformed event from an engine, whose syntax error
// comes before the usage of the object it carries, crashed the lookup of that object.
TEST(ReadUsageTest, AMalformedEventIsNotReadAndDoesNotCrash) {
  for (UsageFormat format : {UsageFormat::kResponses, UsageFormat::kMessages}) {
    EXPECT_FALSE(ReadUsage(R"({"type":"response.c":"x","response":{"id":"r1","usage":)"
                           R"({"input_tokens":20,"input_tokens_details":{"cached_tokens":16}}},)"
                           R"("message":{"usage":{"input_tokens":1}}})",
                           format)
                     .has_value());
  }
  // A count that is not a number is a syntax error: the fields after it are not read.
  EXPECT_FALSE(ReadUsage(R"({"usage":{"prompt_tokens":99g9,"completion_tokens":1}})").has_value());
  // A well-formed event still has its usage read after the top-level lookup failed.
  EXPECT_EQ(ReadUsage(R"({"type":"response.completed","response":{"usage":{"input_tokens":7}}})",
                      UsageFormat::kResponses)
                ->prompt_tokens,
            7);
}

// An empty view (its data() null) and texts shorter than the key are no usage. memmem was given
// the null pointer, undefined behaviour that UBSan reports (the asan preset; tests/fuzz:
// sse_usage).
TEST(ReadUsageTest, EmptyAndShortInputsHaveNoUsage) {
  EXPECT_FALSE(ReadUsage(std::string_view()).has_value());
  EXPECT_FALSE(ReadUsage("{}").has_value());
  SseUsageTap tap(/*drop_usage_event=*/true);
  EXPECT_EQ(tap.Feed(std::string_view()), "");
  EXPECT_EQ(tap.Feed("data: {\"usage\"}\n\n"), "data: {\"usage\"}\n\n");
  EXPECT_FALSE(tap.usage().has_value());
}

// An event that mentions a usage object but has no data line (here a comment line) is passed on,
// not parsed: its data is an empty view, which simdjson must not be given (UBSan, tests/fuzz:
// sse_usage, corpus finding-event-without-data).
TEST(SseUsageTapTest, AnEventWithoutDataIsPassedOn) {
  SseUsageTap tap(/*drop_usage_event=*/true);
  const std::string event = ": {\"usage\":{\"prompt_tokens\":1}}\n\n";
  std::string out(tap.Feed(event));
  out += tap.Finish();
  EXPECT_EQ(out, event);
  EXPECT_FALSE(tap.usage().has_value());
}

TEST(SseUsageTapTest, ReadsTheResponsesStreamsCompletedEventAndPassesEveryByte) {
  const std::string body =
      "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\","
      "\"usage\":null}}\n\n"
      "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\","
      "\"delta\":\"hi\"}\n\n"
      "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\","
      "\"usage\":{\"input_tokens\":40,\"input_tokens_details\":{\"cached_tokens\":32},"
      "\"output_tokens\":2}}}\n\n";
  SseUsageTap tap(/*drop_usage_event=*/false, UsageFormat::kResponses);
  EXPECT_EQ(Relay(tap, body, 7), body);
  ASSERT_TRUE(tap.usage().has_value());
  EXPECT_EQ(tap.usage()->prompt_tokens, 40);
  EXPECT_EQ(tap.usage()->cached_tokens, 32);
}

TEST(SseUsageTapTest, ReadsTheMessagesStreamsInputCountsFromMessageStart) {
  const std::string body =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\","
      "\"usage\":{\"input_tokens\":8,\"cache_read_input_tokens\":32,\"output_tokens\":1}}}\n\n"
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":5}}"
      "\n\n";
  SseUsageTap tap(/*drop_usage_event=*/false, UsageFormat::kMessages);
  EXPECT_EQ(Relay(tap, body, 4096), body);
  ASSERT_TRUE(tap.usage().has_value());
  EXPECT_EQ(tap.usage()->prompt_tokens, 40);
  EXPECT_EQ(tap.usage()->cached_tokens, 32);
}

TEST(SseUsageTapTest, AResponsesStreamsOutputStartsAfterItsAnnouncement) {
  SseUsageTap tap(/*drop_usage_event=*/false, UsageFormat::kResponses);
  tap.Feed("event: response.created\ndata: {\"type\":\"response.created\"}\n\n");
  tap.Feed("event: response.in_progress\ndata: {\"type\":\"response.in_progress\"}\n\n");
  EXPECT_FALSE(tap.output_started());  // sent before the engine computed anything
  tap.Feed("event: response.output_item.added\nda");
  EXPECT_FALSE(tap.output_started());  // not a complete event yet
  tap.Feed("ta: {\"type\":\"response.output_item.added\"}\n\n");
  EXPECT_TRUE(tap.output_started());
}

TEST(SseUsageTapTest, AMessagesStreamsOutputStartsAfterMessageStartAndPings) {
  SseUsageTap tap(/*drop_usage_event=*/false, UsageFormat::kMessages);
  // No event: lines here: the data's type tells.
  tap.Feed("data: {\"type\":\"message_start\",\"message\":{}}\n\ndata: {\"type\":\"ping\"}\n\n");
  EXPECT_FALSE(tap.output_started());
  tap.Feed("data: {\"type\":\"content_block_start\",\"index\":0}\n\n");
  EXPECT_TRUE(tap.output_started());
}

TEST(SseUsageTapTest, AChatStreamsOutputStartsWithItsFirstByte) {
  SseUsageTap tap(/*drop_usage_event=*/false);
  EXPECT_FALSE(tap.output_started());
  tap.Feed("da");
  EXPECT_TRUE(tap.output_started());
}

}  // namespace
}  // namespace warmroute::net
