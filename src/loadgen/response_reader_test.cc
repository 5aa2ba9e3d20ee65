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

// A Responses stream as vLLM sends it (named events, a sequence_number on each, no [DONE]).
constexpr std::string_view kResponsesStream =
    "event: response.created\n"
    "data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\","
    "\"object\":\"response\",\"status\":\"in_progress\",\"output\":[],\"usage\":null}}\n\n"
    "event: response.in_progress\n"
    "data: {\"type\":\"response.in_progress\",\"sequence_number\":1,\"response\":{\"id\":"
    "\"resp_1\",\"status\":\"in_progress\",\"output\":[],\"usage\":null}}\n\n"
    "event: response.output_item.added\n"
    "data: {\"type\":\"response.output_item.added\",\"sequence_number\":2,\"output_index\":0,"
    "\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[]}}\n\n"
    "event: response.content_part.added\n"
    "data: {\"type\":\"response.content_part.added\",\"sequence_number\":3,\"item_id\":\"msg_1\","
    "\"part\":{\"type\":\"output_text\",\"text\":\"\"}}\n\n"
    "event: response.output_text.delta\n"
    "data: {\"type\":\"response.output_text.delta\",\"sequence_number\":4,\"item_id\":\"msg_1\","
    "\"output_index\":0,\"content_index\":0,\"delta\":\"Hi\"}\n\n"
    "event: response.output_text.delta\n"
    "data: {\"type\":\"response.output_text.delta\",\"sequence_number\":5,\"item_id\":\"msg_1\","
    "\"output_index\":0,\"content_index\":0,\"delta\":\"\"}\n\n"
    "event: response.output_text.delta\n"
    "data: {\"type\":\"response.output_text.delta\",\"sequence_number\":6,\"item_id\":\"msg_1\","
    "\"output_index\":0,\"content_index\":0,\"delta\":\" th\\u00e9re\"}\n\n"
    "event: response.output_text.done\n"
    "data: {\"type\":\"response.output_text.done\",\"sequence_number\":7,\"text\":\"Hi "
    "th\\u00e9re\"}\n\n"
    "event: response.output_item.done\n"
    "data: {\"type\":\"response.output_item.done\",\"sequence_number\":8,\"item\":{\"id\":"
    "\"msg_1\",\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hi "
    "th\\u00e9re\"}]}}\n\n"
    "event: response.completed\n"
    "data: {\"type\":\"response.completed\",\"sequence_number\":9,\"response\":{\"id\":\"resp_1\","
    "\"status\":\"completed\",\"output\":[{\"type\":\"message\",\"content\":[{\"type\":"
    "\"output_text\",\"text\":\"Hi th\\u00e9re\"}]}],\"usage\":{\"input_tokens\":3000,"
    "\"input_tokens_details\":{\"cached_tokens\":2944},\"output_tokens\":2,"
    "\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":3002}}}\n\n";

// Feeds `body` to a Responses reader in pieces ending at `cuts`; the time of a piece is its end
// offset in milliseconds.
ResponseReader ReadResponses(std::string_view body, const std::vector<size_t>& cuts,
                             std::string_view content_type = "text/event-stream") {
  ResponseReader reader(200, content_type, request::Endpoint::kResponses);
  size_t at = 0;
  for (size_t cut : cuts) {
    reader.Feed(body.substr(at, cut - at), 0.001 * static_cast<double>(cut));
    at = cut;
  }
  reader.Feed(body.substr(at), 0.001 * static_cast<double>(body.size()));
  reader.Finish(0.001 * static_cast<double>(body.size()) + 1);
  return reader;
}

size_t EndOf(std::string_view text, std::string_view needle) {
  return text.find(needle) + needle.size();
}

TEST(ResponseReaderTest, ReadsAResponsesStream) {
  const std::string_view body = kResponsesStream;
  // One piece per event: an event's time is its end.
  std::vector<size_t> cuts;
  for (size_t at = body.find("\n\n"); at + 2 < body.size(); at = body.find("\n\n", at + 2)) {
    cuts.push_back(at + 2);
  }
  const ResponseReader reader = ReadResponses(body, cuts);
  EXPECT_EQ(reader.error_kind(), "") << reader.error();
  // TTFT is the first non-empty output_text delta; the empty delta is no chunk.
  const double hi = 0.001 * static_cast<double>(EndOf(body, "\"delta\":\"Hi\"}\n\n"));
  const double there = 0.001 * static_cast<double>(EndOf(body, "re\"}\n\n"));
  EXPECT_EQ(reader.chunk_times_s(), (std::vector<double>{hi, there}));
  EXPECT_EQ(reader.answer(), "Hi th\xc3\xa9re");
  ASSERT_TRUE(reader.usage().has_value());
  EXPECT_EQ(reader.usage()->prompt_tokens, 3000);
  EXPECT_EQ(reader.usage()->completion_tokens, 2);
  EXPECT_EQ(reader.usage()->cached_tokens, 2944);
}

TEST(ResponseReaderTest, ReadsAResponsesStreamCutAtEveryByte) {
  const std::string_view body = kResponsesStream;
  for (size_t cut = 1; cut < body.size(); ++cut) {
    const ResponseReader reader = ReadResponses(body, {cut});
    ASSERT_EQ(reader.error_kind(), "") << cut << ": " << reader.error();
    ASSERT_EQ(reader.answer(), "Hi th\xc3\xa9re") << cut;
    ASSERT_EQ(reader.chunk_times_s().size(), 2u) << cut;
    ASSERT_TRUE(reader.usage().has_value()) << cut;
    ASSERT_EQ(reader.usage()->cached_tokens, 2944) << cut;
  }
  std::vector<size_t> every_byte;
  for (size_t cut = 1; cut < body.size(); ++cut) every_byte.push_back(cut);
  const ResponseReader reader = ReadResponses(body, every_byte);
  EXPECT_EQ(reader.answer(), "Hi th\xc3\xa9re");
  EXPECT_EQ(reader.chunk_times_s().front(),
            0.001 * static_cast<double>(EndOf(body, "\"delta\":\"Hi\"}\n\n")));
  ASSERT_TRUE(reader.usage().has_value());
  EXPECT_EQ(reader.usage()->prompt_tokens, 3000);
}

TEST(ResponseReaderTest, NamesResponsesEventsByTheirTypeWithoutAnEventLine) {
  const ResponseReader reader = ReadResponses(
      "data: {\"type\":\"response.output_text.delta\",\"delta\":\"a\"}\r\n\r\n"
      "data: {\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\","
      "\"usage\":{\"input_tokens\":5,\"output_tokens\":1,"
      "\"input_tokens_details\":{\"cached_tokens\":0}}}}\r\n\r\n",
      {});
  EXPECT_EQ(reader.error_kind(), "") << reader.error();
  EXPECT_EQ(reader.answer(), "a");
  ASSERT_TRUE(reader.usage().has_value());
  EXPECT_EQ(reader.usage()->prompt_tokens, 5);
  EXPECT_EQ(reader.usage()->cached_tokens, 0);
}

TEST(ResponseReaderTest, ChatChunksAreNoResponsesContent) {
  const ResponseReader reader = ReadResponses(kChunk1, {});
  EXPECT_EQ(reader.error_kind(), "");
  EXPECT_EQ(reader.answer(), "");
  EXPECT_TRUE(reader.chunk_times_s().empty());
}

TEST(ResponseReaderTest, AResponsesErrorEventBreaksTheStream) {
  const std::string body =
      std::string(kResponsesStream.substr(0, EndOf(kResponsesStream, "\"delta\":\"Hi\"}\n\n"))) +
      "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"engine "
      "died\",\"param\":null,\"sequence_number\":5}\n\n";
  const ResponseReader reader = ReadResponses(body, {});
  EXPECT_EQ(reader.error_kind(), error_kind::kBrokenStream);
  EXPECT_NE(reader.error().find("engine died"), std::string::npos) << reader.error();
  EXPECT_EQ(reader.answer(), "Hi");  // what arrived before the error
}

TEST(ResponseReaderTest, AFailedResponseBreaksTheStream) {
  const ResponseReader reader = ReadResponses(
      "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":"
      "\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"out of KV cache\"}}}\n\n",
      {});
  EXPECT_EQ(reader.error_kind(), error_kind::kBrokenStream);
  EXPECT_NE(reader.error().find("response.failed"), std::string::npos) << reader.error();
  EXPECT_NE(reader.error().find("out of KV cache"), std::string::npos) << reader.error();
}

constexpr std::string_view kResponseObject =
    "{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"incomplete\","
    "\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"output\":[{\"id\":\"msg_1\","
    "\"type\":\"message\",\"role\":\"assistant\",\"status\":\"completed\",\"content\":[{\"type\":"
    "\"output_text\",\"text\":\"Hello\",\"annotations\":[],\"logprobs\":[]},{\"type\":"
    "\"output_text\",\"text\":\" world\",\"annotations\":[]}]}],\"usage\":{\"input_tokens\":10,"
    "\"input_tokens_details\":{\"cached_tokens\":8},\"output_tokens\":2,"
    "\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":12},\"error\":null}";

TEST(ResponseReaderTest, ReadsAWholeResponseObject) {
  for (size_t cut = 1; cut < kResponseObject.size(); ++cut) {
    const ResponseReader reader = ReadResponses(kResponseObject, {cut}, "application/json");
    ASSERT_EQ(reader.error_kind(), "") << cut << ": " << reader.error();
    ASSERT_EQ(reader.answer(), "Hello world") << cut;
    ASSERT_EQ(reader.chunk_times_s().size(), 1u);
    ASSERT_TRUE(reader.usage().has_value());
    EXPECT_EQ(reader.usage()->prompt_tokens, 10);
    EXPECT_EQ(reader.usage()->completion_tokens, 2);
    EXPECT_EQ(reader.usage()->cached_tokens, 8);
  }
  const ResponseReader reader = ReadResponses(kResponseObject, {}, "application/json");
  EXPECT_EQ(reader.chunk_times_s(),
            (std::vector<double>{0.001 * static_cast<double>(kResponseObject.size()) + 1}));
}

TEST(ResponseReaderTest, AResponseObjectWithoutOutputIsABadResponse) {
  const ResponseReader chat = ReadResponses("{\"choices\":[]}", {}, "application/json");
  EXPECT_EQ(chat.error_kind(), error_kind::kBadResponse);
  EXPECT_NE(chat.error().find("\"output\""), std::string::npos) << chat.error();
  const ResponseReader reader = ReadResponses(
      "{\"status\":\"failed\",\"output\":[],\"error\":{\"code\":\"x\",\"message\":\"boom\"}}", {},
      "application/json");
  EXPECT_EQ(reader.error_kind(), error_kind::kBadResponse);
  EXPECT_NE(reader.error().find("boom"), std::string::npos) << reader.error();
}

TEST(ResponseReaderTest, AResponsesHttpErrorCarriesTheMessage) {
  ResponseReader reader(400, "application/json", request::Endpoint::kResponses);
  reader.Feed("{\"error\":{\"message\":\"'input' is required\",\"param\":\"input\"}}", 0.1);
  reader.Finish(0.1);
  EXPECT_EQ(reader.error_kind(), "http_400");
  EXPECT_NE(reader.error().find("'input' is required"), std::string::npos);
}

}  // namespace
}  // namespace warmroute::loadgen
