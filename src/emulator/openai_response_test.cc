#include "emulator/openai_response.h"

#include <string>
#include <vector>

#include "emulator/sse_test_util.h"
#include "gtest/gtest.h"
#include "simdjson.h"

namespace warmroute::emulator {
namespace {

ResponseInfo Info(bool chat) {
  return {.chat = chat,
          .id = chat ? "chatcmpl-1" : "cmpl-1",
          .created = 1700000000,
          .model = "m\"odel"};
}

// The payloads of an SSE stream's "data: " events.
std::vector<std::string> Events(const std::string& stream) {
  std::vector<std::string> events;
  for (const std::string& event : testing::SseEvents(stream)) {
    EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
    events.push_back(event.substr(6));
  }
  return events;
}

simdjson::dom::element Parse(simdjson::dom::parser& parser, const std::string& json) {
  return testing::ParseJson(parser, json);
}

TEST(ResponseIdTest, HasThePrefixAnd32HexDigits) {
  EXPECT_EQ(ResponseId(true, 0x0123456789abcdefull, 1),
            "chatcmpl-0123456789abcdef0000000000000001");
  EXPECT_EQ(ResponseId(false, 0, 0).size(), 5u + 32u);
  EXPECT_EQ(HexId("resp_", 0xffull, 0x10ull), "resp_00000000000000ff0000000000000010");
}

TEST(StreamFormatterTest, ChatStreamIsVllmShaped) {
  StreamFormatter f(Info(true));
  std::string out;
  f.AppendRole(&out);
  f.AppendToken(&out, " mesa", false);
  f.AppendToken(&out, " \"q\"", true);
  f.AppendUsage(&out, {.prompt_tokens = 40, .completion_tokens = 2, .cached_tokens = 32});
  StreamFormatter::AppendDone(&out);
  std::vector<std::string> events = Events(out);
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[4], "[DONE]");
  simdjson::dom::parser parser;
  for (int i = 0; i < 4; ++i) {
    simdjson::dom::element e = Parse(parser, events[i]);
    EXPECT_EQ(std::string_view(e["id"]), "chatcmpl-1");
    EXPECT_EQ(std::string_view(e["object"]), "chat.completion.chunk");
    EXPECT_EQ(int64_t(e["created"]), 1700000000);
    EXPECT_EQ(std::string_view(e["model"]), "m\"odel");
  }
  simdjson::dom::element role = Parse(parser, events[0])["choices"].at(0);
  EXPECT_EQ(std::string_view(role["delta"]["role"]), "assistant");
  EXPECT_EQ(std::string_view(role["delta"]["content"]), "");
  EXPECT_TRUE(role["finish_reason"].is_null());

  simdjson::dom::element token = Parse(parser, events[1])["choices"].at(0);
  EXPECT_EQ(std::string_view(token["delta"]["content"]), " mesa");
  EXPECT_TRUE(token["finish_reason"].is_null());
  EXPECT_EQ(token["delta"]["role"].error(), simdjson::NO_SUCH_FIELD);

  simdjson::dom::element last = Parse(parser, events[2])["choices"].at(0);
  EXPECT_EQ(std::string_view(last["delta"]["content"]), " \"q\"");
  EXPECT_EQ(std::string_view(last["finish_reason"]), "length");

  simdjson::dom::element usage_chunk = Parse(parser, events[3]);
  EXPECT_EQ(simdjson::dom::array(usage_chunk["choices"]).size(), 0u);
  simdjson::dom::element usage = usage_chunk["usage"];
  EXPECT_EQ(int64_t(usage["prompt_tokens"]), 40);
  EXPECT_EQ(int64_t(usage["completion_tokens"]), 2);
  EXPECT_EQ(int64_t(usage["total_tokens"]), 42);
  EXPECT_EQ(int64_t(usage["prompt_tokens_details"]["cached_tokens"]), 32);
}

TEST(StreamFormatterTest, CompletionChunksCarryText) {
  StreamFormatter f(Info(false));
  std::string out;
  f.AppendToken(&out, " a", false);
  f.AppendToken(&out, " b", true);
  std::vector<std::string> events = Events(out);
  ASSERT_EQ(events.size(), 2u);
  simdjson::dom::parser parser;
  simdjson::dom::element first = Parse(parser, events[0]);
  EXPECT_EQ(std::string_view(first["object"]), "text_completion");
  EXPECT_EQ(std::string_view(first["choices"].at(0)["text"]), " a");
  EXPECT_TRUE(first["choices"].at(0)["finish_reason"].is_null());
  simdjson::dom::element second = Parse(parser, events[1]);
  EXPECT_EQ(std::string_view(second["choices"].at(0)["finish_reason"]), "length");
}

TEST(CompleteResponseTest, ChatHasMessageAndUsage) {
  simdjson::dom::parser parser;
  simdjson::dom::element e = Parse(
      parser, CompleteResponse(Info(true), " a b",
                               {.prompt_tokens = 7, .completion_tokens = 2, .cached_tokens = 0}));
  EXPECT_EQ(std::string_view(e["object"]), "chat.completion");
  simdjson::dom::element choice = e["choices"].at(0);
  EXPECT_EQ(std::string_view(choice["message"]["role"]), "assistant");
  EXPECT_EQ(std::string_view(choice["message"]["content"]), " a b");
  EXPECT_EQ(std::string_view(choice["finish_reason"]), "length");
  EXPECT_EQ(int64_t(e["usage"]["total_tokens"]), 9);
  EXPECT_EQ(int64_t(e["usage"]["prompt_tokens_details"]["cached_tokens"]), 0);
}

TEST(CompleteResponseTest, CompletionHasText) {
  simdjson::dom::parser parser;
  simdjson::dom::element e = Parse(
      parser, CompleteResponse(Info(false), " x",
                               {.prompt_tokens = 3, .completion_tokens = 1, .cached_tokens = 0}));
  EXPECT_EQ(std::string_view(e["object"]), "text_completion");
  EXPECT_EQ(std::string_view(e["choices"].at(0)["text"]), " x");
}

TEST(ModelListTest, IsVllmShaped) {
  simdjson::dom::parser parser;
  simdjson::dom::element e = Parse(parser, ModelList("llama", 1700000000, 4096));
  EXPECT_EQ(std::string_view(e["object"]), "list");
  simdjson::dom::element model = e["data"].at(0);
  EXPECT_EQ(std::string_view(model["id"]), "llama");
  EXPECT_EQ(std::string_view(model["object"]), "model");
  EXPECT_EQ(std::string_view(model["owned_by"]), "vllm");
  EXPECT_EQ(std::string_view(model["root"]), "llama");
  EXPECT_TRUE(model["parent"].is_null());
  EXPECT_EQ(int64_t(model["max_model_len"]), 4096);
}

}  // namespace
}  // namespace warmroute::emulator
