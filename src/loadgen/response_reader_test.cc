#include "loadgen/response_reader.h"

#include <gtest/gtest.h>

#include <string>

#include "loadgen/bench_result.h"

namespace warmroute::loadgen {
namespace {

constexpr std::string_view kChunk1 =
    "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
    "\"content\":\"Hi\"}}]}\n\n";
constexpr std::string_view kChunk2 =
    "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" there\"},"
    "\"finish_reason\":\"length\"}]}\n\n";
constexpr std::string_view kUsage =
    "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":3000,"
    "\"completion_tokens\":2,\"total_tokens\":3002,"
    "\"prompt_tokens_details\":{\"cached_tokens\":2992}}}\n\n";
constexpr std::string_view kDone = "data: [DONE]\n\n";

TEST(ResponseReaderTest, TimesEveryContentChunkAndReadsUsageFromAStream) {
  ResponseReader reader(200, "text/event-stream; charset=utf-8");
  reader.Feed(kChunk1, 0.10);
  reader.Feed(kChunk2, 0.15);
  reader.Feed(std::string(kUsage) + std::string(kDone), 0.16);
  reader.Finish(0.17);
  EXPECT_EQ(reader.error_kind(), "") << reader.error();
  EXPECT_EQ(reader.chunk_times_s(), (std::vector<double>{0.10, 0.15}));
  EXPECT_EQ(reader.answer(), "Hi there");
  ASSERT_TRUE(reader.usage().has_value());
  EXPECT_EQ(reader.usage()->prompt_tokens, 3000);
  EXPECT_EQ(reader.usage()->completion_tokens, 2);
  EXPECT_EQ(reader.usage()->cached_tokens, 2992);
}

TEST(ResponseReaderTest, ReassemblesEventsSplitAcrossPieces) {
  const std::string body = std::string(kChunk1) + std::string(kChunk2) + std::string(kUsage);
  ResponseReader reader(200, "text/event-stream");
  for (size_t i = 0; i < body.size(); i += 7) reader.Feed(body.substr(i, 7), 0.001 * i);
  reader.Finish(1);
  EXPECT_EQ(reader.error_kind(), "");
  EXPECT_EQ(reader.answer(), "Hi there");
  EXPECT_EQ(reader.chunk_times_s().size(), 2u);
  ASSERT_TRUE(reader.usage().has_value());
  EXPECT_EQ(reader.usage()->cached_tokens, 2992);
}

TEST(ResponseReaderTest, ReadsCompletionsTextChunks) {
  ResponseReader reader(200, "text/event-stream");
  reader.Feed("data: {\"choices\":[{\"index\":0,\"text\":\"abc\"}]}\r\n\r\n", 0.2);
  reader.Finish(0.3);
  EXPECT_EQ(reader.answer(), "abc");
  EXPECT_EQ(reader.chunk_times_s(), (std::vector<double>{0.2}));
}

TEST(ResponseReaderTest, ReadsAWholeJsonAnswer) {
  ResponseReader reader(200, "application/json");
  reader.Feed(
      "{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"Hello\"}}],"
      "\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":1}}",
      0.4);
  reader.Finish(0.5);
  EXPECT_EQ(reader.error_kind(), "");
  EXPECT_EQ(reader.answer(), "Hello");
  EXPECT_EQ(reader.chunk_times_s(), (std::vector<double>{0.5}));
  ASSERT_TRUE(reader.usage().has_value());
  EXPECT_EQ(reader.usage()->prompt_tokens, 10);
  EXPECT_FALSE(reader.usage()->cached_tokens.has_value());
}

TEST(ResponseReaderTest, AnHtmlPageIsABadResponseNamingTheContentType) {
  ResponseReader reader(200, "text/html");
  reader.Feed("<html><body>It works!</body></html>", 0.1);
  reader.Finish(0.1);
  EXPECT_EQ(reader.error_kind(), error_kind::kBadResponse);
  EXPECT_NE(reader.error().find("text/html"), std::string::npos) << reader.error();
  EXPECT_NE(reader.error().find("<html>"), std::string::npos) << reader.error();
}

TEST(ResponseReaderTest, JsonWithoutChoicesIsABadResponse) {
  ResponseReader reader(200, "application/json");
  reader.Feed("{\"hello\":1}", 0.1);
  reader.Finish(0.1);
  EXPECT_EQ(reader.error_kind(), error_kind::kBadResponse);
}

TEST(ResponseReaderTest, NonJsonSseDataIsABadResponse) {
  ResponseReader reader(200, "text/event-stream");
  reader.Feed("data: hello world\n\n", 0.1);
  reader.Finish(0.1);
  EXPECT_EQ(reader.error_kind(), error_kind::kBadResponse);
  EXPECT_NE(reader.error().find("hello world"), std::string::npos);
}

TEST(ResponseReaderTest, AnEmptyStreamIsABadResponse) {
  ResponseReader reader(200, "text/event-stream");
  reader.Finish(0.1);
  EXPECT_EQ(reader.error_kind(), error_kind::kBadResponse);
}

TEST(ResponseReaderTest, AnErrorEventBreaksTheStream) {
  ResponseReader reader(200, "text/event-stream");
  reader.Feed(kChunk1, 0.1);
  reader.Feed("data: {\"error\":{\"message\":\"engine died\",\"code\":500}}\n\n", 0.2);
  reader.Finish(0.3);
  EXPECT_EQ(reader.error_kind(), error_kind::kBrokenStream);
  EXPECT_NE(reader.error().find("engine died"), std::string::npos);
}

TEST(ResponseReaderTest, AnHttpErrorCarriesTheOpenAiMessage) {
  ResponseReader reader(429, "application/json");
  reader.Feed("{\"error\":{\"message\":\"rate limited\",\"type\":\"x\"}}", 0.1);
  reader.Finish(0.1);
  EXPECT_EQ(reader.error_kind(), "http_429");
  EXPECT_NE(reader.error().find("rate limited"), std::string::npos);
}

TEST(ResponseReaderTest, AnHttpErrorWithoutJsonQuotesTheBody) {
  ResponseReader reader(502, "text/plain");
  reader.Feed("Bad Gateway", 0.1);
  reader.Finish(0.1);
  EXPECT_EQ(reader.error_kind(), "http_502");
  EXPECT_NE(reader.error().find("Bad Gateway"), std::string::npos);
}

}  // namespace
}  // namespace warmroute::loadgen
