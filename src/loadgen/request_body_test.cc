#include "loadgen/request_body.h"

#include <gtest/gtest.h>

#include <string>

#include "core/request/chat_template.h"
#include "core/request/inference_request.h"

namespace warmroute::loadgen {
namespace {

using request::Endpoint;

workload::WorkloadRequest ChatRequest() {
  workload::WorkloadRequest r;
  r.model = "m";
  r.messages = {{"system", "be \"nice\"\n\\ \x01 caf\xc3\xa9"},
                {"user", "hi"},
                {"assistant", "hello"},
                {"user", "again"}};
  r.max_tokens = 7;
  return r;
}

workload::WorkloadRequest CompletionsRequest() {
  workload::WorkloadRequest r;
  r.endpoint = Endpoint::kCompletions;
  r.prompt = "p \"q\"";
  r.max_tokens = 3;
  return r;
}

BodyOptions Options(std::optional<Endpoint> api, bool stream = true, bool ignore_eos = false) {
  BodyOptions options;
  options.stream = stream;
  options.ignore_eos = ignore_eos;
  options.api = api;
  return options;
}

// The prompt the engine renders for `body` sent to `api` (chat template, or the prompt as is).
std::string Rendered(Endpoint api, const std::string& body) {
  absl::StatusOr<request::InferenceRequest> parsed = request::ParseInferenceRequest(api, body);
  EXPECT_TRUE(parsed.ok()) << parsed.status() << "\n" << body;
  return parsed.ok() ? request::RenderPrompt(*parsed) : "";
}

TEST(RequestBodyTest, StreamingChatAsksForUsage) {
  workload::WorkloadRequest r;
  r.model = "m";
  r.messages = {{"system", "be \"nice\""}, {"user", "hi"}};
  r.max_tokens = 7;
  EXPECT_EQ(BuildRequestBody(r, Options(std::nullopt)),
            "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"be \\\"nice\\\"\"},"
            "{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":7,\"stream\":true,"
            "\"stream_options\":{\"include_usage\":true}}");
  EXPECT_EQ(RequestTarget(SentAs(r, {})), "/v1/chat/completions");
  r.endpoint = Endpoint::kCompletions;
  r.model = "";
  r.prompt = "p";
  EXPECT_EQ(BuildRequestBody(r, Options(std::nullopt, /*stream=*/false, /*ignore_eos=*/true)),
            "{\"prompt\":\"p\",\"max_tokens\":7,\"stream\":false,\"ignore_eos\":true}");
  EXPECT_EQ(RequestTarget(SentAs(r, {})), "/v1/completions");
}

TEST(RequestBodyTest, ChatAsResponsesPutsTheSystemMessageInInstructions) {
  const BodyOptions options = Options(Endpoint::kResponses, /*stream=*/true, /*ignore_eos=*/false);
  EXPECT_EQ(BuildRequestBody(ChatRequest(), options),
            "{\"model\":\"m\",\"instructions\":\"be \\\"nice\\\"\\n\\\\ \\u0001 caf\xc3\xa9\","
            "\"input\":[{\"role\":\"user\",\"content\":\"hi\"},"
            "{\"role\":\"assistant\",\"content\":\"hello\"},"
            "{\"role\":\"user\",\"content\":\"again\"}],"
            "\"max_output_tokens\":7,\"stream\":true,\"store\":false}");
  EXPECT_EQ(RequestTarget(SentAs(ChatRequest(), options)), "/v1/responses");
  const std::string body = BuildRequestBody(
      ChatRequest(), Options(Endpoint::kResponses, /*stream=*/false, /*ignore_eos=*/true));
  EXPECT_TRUE(body.ends_with(
      "\"max_output_tokens\":7,\"stream\":false,\"store\":false,\"ignore_eos\":true}"))
      << body;
}

TEST(RequestBodyTest, ResponsesWithoutALeadingSystemMessageHasNoInstructions) {
  const BodyOptions options = Options(Endpoint::kResponses, /*stream=*/false, /*ignore_eos=*/false);
  workload::WorkloadRequest r = ChatRequest();
  r.model = "";
  r.messages = {{"user", "q"}, {"system", "late"}};
  EXPECT_EQ(BuildRequestBody(r, options),
            "{\"input\":[{\"role\":\"user\",\"content\":\"q\"},"
            "{\"role\":\"system\",\"content\":\"late\"}],"
            "\"max_output_tokens\":7,\"stream\":false,\"store\":false}");
  // An empty system message stays an item: empty instructions would render no system turn.
  r.messages = {{"system", ""}, {"user", "q"}};
  EXPECT_EQ(BuildRequestBody(r, options),
            "{\"input\":[{\"role\":\"system\",\"content\":\"\"},"
            "{\"role\":\"user\",\"content\":\"q\"}],"
            "\"max_output_tokens\":7,\"stream\":false,\"store\":false}");
}

TEST(RequestBodyTest, ACompletionsPromptIsOneUserMessage) {
  EXPECT_EQ(BuildRequestBody(CompletionsRequest(),
                             Options(Endpoint::kResponses, /*stream=*/false, /*ignore_eos=*/false)),
            "{\"input\":[{\"role\":\"user\",\"content\":\"p \\\"q\\\"\"}],"
            "\"max_output_tokens\":3,\"stream\":false,\"store\":false}");
  EXPECT_EQ(BuildRequestBody(CompletionsRequest(), Options(Endpoint::kChatCompletions,
                                                           /*stream=*/false, /*ignore_eos=*/false)),
            "{\"messages\":[{\"role\":\"user\",\"content\":\"p \\\"q\\\"\"}],"
            "\"max_tokens\":3,\"stream\":false}");
}

TEST(RequestBodyTest, ChatAsCompletionsSendsTheRenderedTemplate) {
  const std::string body = BuildRequestBody(
      ChatRequest(), Options(Endpoint::kCompletions, /*stream=*/true, /*ignore_eos=*/false));
  EXPECT_EQ(Rendered(Endpoint::kCompletions, body),
            request::RenderChat(ChatRequest().messages, /*add_generation_prompt=*/true));
  EXPECT_NE(body.find("\"stream_options\":{\"include_usage\":true}"), std::string::npos);
}

// What the gateway keys on and the engine caches is the rendered prompt: a chat workload sent as
// Responses requests renders exactly as it does sent as chat.
TEST(RequestBodyTest, EveryApiRendersTheSamePrompt) {
  const workload::WorkloadRequest chat = ChatRequest();
  EXPECT_EQ(Rendered(Endpoint::kResponses, BuildRequestBody(chat, Options(Endpoint::kResponses))),
            Rendered(Endpoint::kChatCompletions, BuildRequestBody(chat, {})));
  // A completions prompt as chat or Responses: the same user turn either way.
  const workload::WorkloadRequest prompt = CompletionsRequest();
  EXPECT_EQ(Rendered(Endpoint::kResponses, BuildRequestBody(prompt, Options(Endpoint::kResponses))),
            Rendered(Endpoint::kChatCompletions,
                     BuildRequestBody(prompt, Options(Endpoint::kChatCompletions))));
}

TEST(RequestBodyTest, ParsesTheApiFlag) {
  for (Endpoint api : {Endpoint::kChatCompletions, Endpoint::kCompletions, Endpoint::kResponses}) {
    absl::StatusOr<Endpoint> parsed = ParseApiFlag("--api", ApiName(api));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, api);
  }
  for (std::string_view bad : {"", "Responses", "messages", "chat ", "/v1/responses"}) {
    absl::StatusOr<Endpoint> parsed = ParseApiFlag("--api", bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(parsed.status().message(),
              "--api must be chat, completions or responses, got \"" + std::string(bad) + "\"");
  }
}

}  // namespace
}  // namespace warmroute::loadgen
