#include "core/request/responses_request.h"

#include <string>
#include <vector>

#include "common/status.h"
#include "core/request/chat_template.h"
#include "core/request/parse_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::request {
namespace {

using ::testing::HasSubstr;
using ::warmroute::request::testing::ExpectInvalid;

absl::StatusOr<InferenceRequest> Responses(std::string_view body) {
  return ParseInferenceRequest(Endpoint::kResponses, body);
}

std::vector<ChatMessage> Messages(const InferenceRequest& request) { return request.messages; }

TEST(ResponsesRequestTest, AStringInputIsOneUserMessage) {
  absl::StatusOr<InferenceRequest> req = Responses(R"({"model": "m", "input": "Hello"})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->endpoint, Endpoint::kResponses);
  EXPECT_EQ(req->model, "m");
  EXPECT_EQ(Messages(*req), (std::vector<ChatMessage>{{"user", "Hello"}}));
  EXPECT_TRUE(req->tools.empty());
  EXPECT_FALSE(req->instructions.has_value());
  EXPECT_FALSE(req->previous_response_id.has_value());
  EXPECT_TRUE(req->request_id.empty());
  EXPECT_TRUE(req->store);
  EXPECT_FALSE(req->background);
  EXPECT_FALSE(req->stream);
  EXPECT_FALSE(req->max_tokens.has_value());
  EXPECT_EQ(RenderPrompt(*req),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ResponsesRequestTest, ReadsEveryField) {
  absl::StatusOr<InferenceRequest> req = Responses(R"({
      "model": "m", "input": "x", "instructions": "Be brief.", "max_output_tokens": 9,
      "stream": true, "store": false, "background": false, "previous_response_id": "resp_1",
      "request_id": "resp_mine", "cache_salt": "s", "user": "u", "seed": 5, "ignore_eos": true,
      "temperature": 0.2, "metadata": {"k": "v"}, "reasoning": null, "tool_choice": "auto"})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->instructions, "Be brief.");
  EXPECT_EQ(req->max_tokens, 9);
  EXPECT_TRUE(req->stream);
  EXPECT_FALSE(req->store);
  EXPECT_FALSE(req->background);
  EXPECT_EQ(req->previous_response_id, "resp_1");
  EXPECT_EQ(req->request_id, "resp_mine");
  EXPECT_EQ(req->cache_salt, "s");
  EXPECT_EQ(req->user, "u");
  EXPECT_EQ(req->seed, 5u);
  EXPECT_TRUE(req->ignore_eos);
  EXPECT_EQ(Messages(*req), (std::vector<ChatMessage>{{"system", "Be brief."}, {"user", "x"}}));
}

TEST(ResponsesRequestTest, NullFieldsAreUnset) {
  absl::StatusOr<InferenceRequest> req = Responses(
      R"({"input": "x", "instructions": null, "previous_response_id": null, "store": null,
          "background": null, "request_id": null, "max_output_tokens": null, "tools": null})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_FALSE(req->instructions.has_value());
  EXPECT_FALSE(req->previous_response_id.has_value());
  EXPECT_TRUE(req->store);
  EXPECT_FALSE(req->background);
  EXPECT_TRUE(req->request_id.empty());
  EXPECT_TRUE(req->tools.empty());
}

TEST(ResponsesRequestTest, EmptyInstructionsAddNoSystemMessage) {
  absl::StatusOr<InferenceRequest> req = Responses(R"({"input": "x", "instructions": ""})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->instructions, "");
  EXPECT_EQ(Messages(*req), (std::vector<ChatMessage>{{"user", "x"}}));
}

TEST(ResponsesRequestTest, ReadsEveryKindOfItemInOrder) {
  absl::StatusOr<InferenceRequest> req = Responses(R"({"input": [
      {"role": "developer", "content": "Use metric units."},
      {"type": "message", "role": "user",
       "content": [{"type": "input_text", "text": "Weather in"}, {"type": "text", "text": "Paris?"}]},
      {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text",
       "text": "I should call the tool."}]},
      {"type": "function_call", "call_id": "call_1", "name": "get_weather",
       "arguments": "{\"city\":\"Paris\"}", "id": "fc_1", "status": "completed"},
      {"type": "function_call_output", "call_id": "call_1", "output": "18 C, sunny"},
      {"type": "message", "role": "assistant", "status": "completed", "id": "msg_1",
       "content": [{"type": "output_text", "text": "It is 18 C.", "annotations": []}]},
      {"type": "function_call_output", "call_id": "call_2",
       "output": [{"type": "input_text", "text": "part"}]},
      {"role": "user", "content": null}]})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(Messages(*req),
            (std::vector<ChatMessage>{
                {"developer", "Use metric units."},
                {"user", "Weather in\nParis?"},
                {"assistant", R"({"name": "get_weather", "parameters": {"city":"Paris"}})"},
                {"tool", "18 C, sunny"},
                {"assistant", "It is 18 C."},
                {"tool", "part"},
                {"user", ""}}));
}

TEST(ResponsesRequestTest, ToolCallTextQuotesTheNameAndKeepsTheArguments) {
  EXPECT_EQ(ToolCallText("a\"b", "{}"), R"({"name": "a\"b", "parameters": {}})");
  EXPECT_EQ(ToolCallText("f", "not json"), R"({"name": "f", "parameters": not json})");
}

TEST(ResponsesRequestTest, ToolsAreKeptMinifiedAndRenderedAfterTheInstructions) {
  absl::StatusOr<InferenceRequest> req = Responses(R"({"instructions": "Help.", "input": "Hi",
      "tools": [ {"type": "function", "name": "f", "parameters": {"type": "object"}} ]})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->tools, R"([{"type":"function","name":"f","parameters":{"type":"object"}}])");
  EXPECT_EQ(RenderPrompt(*req),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nHelp.\n\nTools: "
            R"([{"type":"function","name":"f","parameters":{"type":"object"}}])"
            "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  // Without instructions the tools are a system message of their own.
  req = Responses(R"({"input": "Hi", "tools": [{"type": "function", "name": "f"}]})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(RenderPrompt(*req),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nTools: "
            R"([{"type":"function","name":"f"}])"
            "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  // An empty list is no tools.
  req = Responses(R"({"input": "Hi", "tools": []})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_TRUE(req->tools.empty());
}

TEST(ResponsesRequestTest, RequestsDifferingInTheLastItemShareTheWholeEarlierText) {
  const std::string head = R"({"instructions": "You are a travel agent.",
      "tools": [{"type": "function", "name": "book", "parameters": {}}],
      "input": [{"role": "user", "content": "Find me a flight."},
                {"type": "function_call", "call_id": "c", "name": "book", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c", "output": "booked"},)";
  absl::StatusOr<InferenceRequest> a =
      Responses(head + R"({"role": "user", "content": "Thanks!"}]})");
  absl::StatusOr<InferenceRequest> b =
      Responses(head + R"({"role": "user", "content": "And a hotel?"}]})");
  absl::StatusOr<InferenceRequest> earlier =
      Responses(head.substr(0, head.size() - 1) + "]}");  // the items before the last one
  ASSERT_TRUE(a.ok() && b.ok() && earlier.ok());
  const std::string shared = RenderChat(earlier->messages, earlier->tools, false);
  const std::string prompt_a = RenderPrompt(*a);
  const std::string prompt_b = RenderPrompt(*b);
  EXPECT_EQ(prompt_a.substr(0, shared.size()), shared);
  EXPECT_EQ(prompt_b.substr(0, shared.size()), shared);
  EXPECT_NE(prompt_a, prompt_b);
  EXPECT_THAT(shared, HasSubstr("Tools: "));
}

TEST(ResponsesRequestTest, InputIsRequired) {
  ExpectInvalid(Responses(R"({"model": "m"})"), "input", "'input' is required");
  ExpectInvalid(Responses(R"({"input": null})"), "input", "got null");
  ExpectInvalid(Responses(R"({"input": 3})"), "input", "a string or an array");
}

TEST(ResponsesRequestTest, BackgroundNeedsStore) {
  ExpectInvalid(Responses(R"({"input": "x", "background": true, "store": false})"), "background",
                "background can only be used when `store` is true");
  EXPECT_TRUE(Responses(R"({"input": "x", "background": true})").ok());
  EXPECT_TRUE(Responses(R"({"input": "x", "background": false, "store": false})").ok());
}

TEST(ResponsesRequestTest, RejectsWrongTypes) {
  ExpectInvalid(Responses(R"({"input": "x", "instructions": 1})"), "instructions");
  ExpectInvalid(Responses(R"({"input": "x", "store": "yes"})"), "store");
  ExpectInvalid(Responses(R"({"input": "x", "background": 1})"), "background");
  ExpectInvalid(Responses(R"({"input": "x", "stream": "no"})"), "stream");
  ExpectInvalid(Responses(R"({"input": "x", "previous_response_id": 7})"), "previous_response_id");
  ExpectInvalid(Responses(R"({"input": "x", "request_id": 7})"), "request_id");
  ExpectInvalid(Responses(R"({"input": "x", "request_id": ""})"), "request_id", "non-empty");
  ExpectInvalid(Responses(R"({"input": "x", "max_output_tokens": 0})"), "max_output_tokens",
                "at least 1");
  ExpectInvalid(Responses(R"({"input": "x", "max_output_tokens": "9"})"), "max_output_tokens");
  ExpectInvalid(Responses(R"({"input": "x", "tools": {}})"), "tools");
  ExpectInvalid(Responses(R"({"input": "x", "tools": [1]})"), "tools[0]");
  ExpectInvalid(Responses(R"({"input": "x", "cache_salt": ""})"), "cache_salt");
  ExpectInvalid(Responses(R"({"input": "x", "prompt": {"id": "p"}})"), "prompt",
                "prompt template is not supported");
  ExpectInvalid(Responses(R"({"input": "x", "model": 3})"), "model");
}

TEST(ResponsesRequestTest, RejectsBadItems) {
  ExpectInvalid(Responses(R"({"input": [1]})"), "input[0]");
  ExpectInvalid(Responses(R"({"input": [{"content": "x"}]})"), "input[0]", "'type' or a 'role'");
  ExpectInvalid(Responses(R"({"input": [{"type": "message", "content": "x"}]})"), "input[0].role");
  ExpectInvalid(Responses(R"({"input": [{"role": 1, "content": "x"}]})"), "input[0].role");
  ExpectInvalid(Responses(R"({"input": [{"role": "user", "content": 1}]})"), "input[0].content");
  ExpectInvalid(Responses(R"({"input": [{"role": "user", "content": [{"type": "input_image",
      "image_url": "http://x"}]}]})"),
                "input[0].content", "only text content is supported");
  ExpectInvalid(Responses(R"({"input": [{"role": "user", "content": [{"type": "input_text"}]}]})"),
                "input[0].content", "text' must be a string");
  ExpectInvalid(Responses(R"({"input": [{"type": "item_reference", "id": "x"}]})"), "input[0].type",
                "unsupported input item type 'item_reference'");
  ExpectInvalid(Responses(R"({"input": [{"type": 3}]})"), "input[0].type");
  ExpectInvalid(Responses(R"({"input": [{"type": "function_call", "name": "f",
      "arguments": "{}"}]})"),
                "input[0].call_id", "is required");
  ExpectInvalid(Responses(R"({"input": [{"type": "function_call", "call_id": "c",
      "arguments": "{}"}]})"),
                "input[0].name");
  ExpectInvalid(Responses(R"({"input": [{"type": "function_call", "call_id": "c", "name": "f",
      "arguments": {}}]})"),
                "input[0].arguments", "must be a string");
  ExpectInvalid(Responses(R"({"input": [{"type": "function_call_output", "call_id": "c"}]})"),
                "input[0].output");
  ExpectInvalid(Responses(R"({"input": ["x", {"role": "user", "content": "y"}]})"), "input[0]");
}

TEST(ResponsesRequestTest, ParsingIntoAnEarlierRequestResetsItsResponsesFields) {
  InferenceRequest request;
  ASSERT_TRUE(ParseInferenceRequestInto(
                  Endpoint::kResponses,
                  R"({"input": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
                      "instructions": "i", "store": false, "request_id": "r",
                      "previous_response_id": "p", "tools": [{"type": "function"}]})",
                  request)
                  .ok());
  ASSERT_EQ(request.messages.size(), 3u);
  ASSERT_TRUE(ParseInferenceRequestInto(Endpoint::kResponses, R"({"input": "c"})", request).ok());
  EXPECT_EQ(request, *Responses(R"({"input": "c"})"));
  ASSERT_TRUE(ParseInferenceRequestInto(Endpoint::kChatCompletions,
                                        R"({"messages": [{"role": "user", "content": "d"}]})",
                                        request)
                  .ok());
  EXPECT_EQ(request, *ParseInferenceRequest(Endpoint::kChatCompletions,
                                            std::string_view(R"({"messages": [{"role": "user",
                                                                 "content": "d"}]})")));
}

}  // namespace
}  // namespace warmroute::request
