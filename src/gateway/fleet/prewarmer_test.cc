#include "gateway/fleet/prewarmer.h"

#include <string>

#include "gtest/gtest.h"

namespace warmroute::gateway {
namespace {

TEST(PrewarmBodyTest, AsksForOneTokenNotStreamed) {
  absl::StatusOr<std::string> body =
      PrewarmBody(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,)"
                  R"("stream_options":{"include_usage":true},"max_tokens":512,"cache_salt":"s"})");
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(*body, R"({"model":"m","messages":[{"role":"user","content":"hi"}],"stream":false,)"
                   R"("stream_options":null,"max_tokens":1,"cache_salt":"s"})");
}

TEST(PrewarmBodyTest, InsertsWhatIsMissingAndCapsMaxCompletionTokens) {
  absl::StatusOr<std::string> body =
      PrewarmBody(R"({"model":"m","prompt":"p","max_completion_tokens":64})");
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(*body, R"({"stream":false,"max_tokens":1,"model":"m","prompt":"p",)"
                   R"("max_completion_tokens":1})");
}

TEST(PrewarmBodyTest, RefusesWhatIsNotAnObject) {
  for (const char* bad : {"[1]", "\"x\"", "{", ""}) {
    EXPECT_EQ(PrewarmBody(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(PrewarmPathTest, OnlyTheEndpointsWhoseMaxTokensEveryEngineHonours) {
  EXPECT_EQ(PrewarmPath(request::Endpoint::kChatCompletions), "/v1/chat/completions");
  EXPECT_EQ(PrewarmPath(request::Endpoint::kCompletions), "/v1/completions");
  EXPECT_EQ(PrewarmPath(request::Endpoint::kResponses), "");
  EXPECT_EQ(PrewarmPath(request::Endpoint::kMessages), "");
}

}  // namespace
}  // namespace warmroute::gateway
