#include "core/request/messages_request.h"

#include <string>
#include <vector>

#include "common/status.h"
#include "core/request/parse_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::request {
namespace {

using ::testing::HasSubstr;
using ::warmroute::request::testing::ExpectInvalid;

absl::StatusOr<InferenceRequest> Messages(std::string_view body) {
  return ParseInferenceRequest(Endpoint::kMessages, body);
}

TEST(MessagesRequestTest, ParsesAMinimalRequest) {
  absl::StatusOr<InferenceRequest> req = Messages(
      R"({"model": "claude", "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->endpoint, Endpoint::kMessages);
  EXPECT_EQ(req->model, "claude");
  EXPECT_EQ(req->max_tokens, 64);
  EXPECT_FALSE(req->stream);
  EXPECT_EQ(req->messages, (std::vector<ChatMessage>{{"user", "Hi"}}));
  EXPECT_EQ(RenderPrompt(*req),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(MessagesRequestTest, SystemTextAndToolsComeFirst) {
  absl::StatusOr<InferenceRequest> req = Messages(R"({"max_tokens": 8, "stream": true,
      "system": [{"type": "text", "text": "x-anthropic-billing-header: cc=1;hash=abc"},
                 {"type": "text", "text": "You are "}, {"type": "text", "text": "Claude."}],
      "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
      "messages": [{"role": "user", "content": "Weather?"},
                   {"role": "system", "content": " Be brief."}]})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_TRUE(req->stream);
  EXPECT_EQ(req->tools, R"([{"name":"get_weather","input_schema":{"type":"object"}}])");
  EXPECT_EQ(req->messages, (std::vector<ChatMessage>{{"system", "You are Claude. Be brief."},
                                                     {"user", "Weather?"}}));
  EXPECT_EQ(RenderPrompt(*req),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
            "You are Claude. Be brief.\n\nTools: "
            R"([{"name":"get_weather","input_schema":{"type":"object"}}])"
            "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWeather?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  req = Messages(R"({"max_tokens": 8, "system": "Plain.", "messages": []})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->messages, (std::vector<ChatMessage>{{"system", "Plain."}}));
}

TEST(MessagesRequestTest, ToolUseAndToolResultBlocks) {
  absl::StatusOr<InferenceRequest> req = Messages(R"({"max_tokens": 8, "messages": [
      {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
      {"role": "assistant", "content": [
          {"type": "thinking", "thinking": "Call the tool.", "signature": "sig"},
          {"type": "text", "text": "Let me check."},
          {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
           "input": {"city": "Paris", "days": 1}}]},
      {"role": "user", "content": [
          {"type": "tool_result", "tool_use_id": "toolu_1",
           "content": [{"type": "text", "text": "18 C"}, {"type": "text", "text": "sunny"}]},
          {"type": "text", "text": "Thanks."}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2",
                                    "content": "done"}]},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "noop"}]}]})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->messages,
            (std::vector<ChatMessage>{
                {"user", "Weather in Paris?"},
                {"assistant",
                 "Let me check.\n"
                 R"({"name": "get_weather", "parameters": {"city":"Paris","days":1}})"},
                {"tool", "18 C\nsunny"},
                {"user", "Thanks."},
                {"tool", "done"},
                {"assistant", R"({"name": "noop", "parameters": {}})"}}));
}

TEST(MessagesRequestTest, MaxTokensAndMessagesAreRequired) {
  ExpectInvalid(Messages(R"({"messages": [{"role": "user", "content": "Hi"}]})"), "max_tokens",
                "'max_tokens' is required");
  ExpectInvalid(Messages(R"({"max_tokens": null, "messages": []})"), "max_tokens");
  ExpectInvalid(Messages(R"({"max_tokens": 0, "messages": []})"), "max_tokens", "at least 1");
  ExpectInvalid(Messages(R"({"max_tokens": 5})"), "messages", "'messages' is required");
  ExpectInvalid(Messages(R"({"max_tokens": 5, "messages": {}})"), "messages");
}

TEST(MessagesRequestTest, RejectsBadMessagesAndBlocks) {
  const auto with = [](std::string_view messages) {
    return Messages(R"({"max_tokens": 5, "messages": )" + std::string(messages) + "}");
  };
  ExpectInvalid(with(R"([1])"), "messages[0]");
  ExpectInvalid(with(R"([{"content": "x"}])"), "messages[0].role");
  ExpectInvalid(with(R"([{"role": "tool", "content": "x"}])"), "messages[0].role",
                "'user' or 'assistant'");
  ExpectInvalid(with(R"([{"role": "user"}])"), "messages[0].content", "is required");
  ExpectInvalid(with(R"([{"role": "user", "content": 1}])"), "messages[0].content");
  ExpectInvalid(with(R"([{"role": "user", "content": [{"type": "image", "source": {}}]}])"),
                "messages[0].content[0]", "got 'image'");
  ExpectInvalid(with(R"([{"role": "user", "content": [{"text": "x"}]}])"), "messages[0].content[0]",
                "type' must be a string");
  ExpectInvalid(with(R"([{"role": "user", "content": [{"type": "text"}]}])"),
                "messages[0].content[0]", "text' must be a string");
  ExpectInvalid(with(R"([{"role": "assistant", "content": [{"type": "tool_use", "input": {}}]}])"),
                "messages[0].content[0]", "name' must be a string");
  ExpectInvalid(with(R"([{"role": "assistant", "content": [{"type": "tool_use", "name": "f",
                          "input": [1]}]}])"),
                "messages[0].content[0].input");
  ExpectInvalid(with(R"([{"role": "user", "content": [{"type": "tool_result",
                          "content": [{"type": "image"}]}]}])"),
                "messages[0].content[0].content", "got 'image'");
  ExpectInvalid(Messages(R"({"max_tokens": 5, "system": 3, "messages": []})"), "system");
  ExpectInvalid(Messages(R"({"max_tokens": 5, "system": [{"type": "image"}], "messages": []})"),
                "system", "only text blocks");
  ExpectInvalid(Messages(R"({"max_tokens": 5, "tools": "f", "messages": []})"), "tools");
  ExpectInvalid(Messages(R"({"max_tokens": 5, "stream": 1, "messages": []})"), "stream");
}

}  // namespace
}  // namespace warmroute::request
