#include "gateway/proxy/forwarding.h"

#include <gtest/gtest.h>

namespace warmroute::gateway {
namespace {

using request::Endpoint;
using request::ParseInferenceRequest;

TEST(KeepForwardedHeadersTest, DropsHopByHopHostAndLengthKeepsTheRest) {
  net::HttpHeaders in = {{"Host", "gw:8080"},
                         {"Connection", "keep-alive"},
                         {"Content-Length", "12"},
                         {"Authorization", "Bearer k"},
                         {"Content-Type", "application/json"},
                         {"Transfer-Encoding", "chunked"},
                         {"Proxy-Authorization", "x"},
                         {"OpenAI-Organization", "org"},
                         {"Expect", "100-continue"},
                         {"TE", "trailers"}};
  KeepForwardedHeaders(in, /*strip_credentials=*/false);
  net::HttpHeaders expected = {{"Authorization", "Bearer k"},
                               {"Content-Type", "application/json"},
                               {"OpenAI-Organization", "org"}};
  EXPECT_EQ(in, expected);
}

TEST(KeepForwardedHeadersTest, WithTenancyTheClientsKeyAndTenantHeaderNeverReachABackend) {
  net::HttpHeaders in = {{"authorization", "Bearer sk-secret"},
                         {"X-Warmroute-Tenant", "other"},
                         {"Content-Type", "application/json"}};
  net::HttpHeaders expected = {{"Content-Type", "application/json"}};
  KeepForwardedHeaders(in, /*strip_credentials=*/true);
  EXPECT_EQ(in, expected);
}

TEST(WithCacheSaltTest, OverwritesTheClientsSaltAndTheEngineParsesOurs) {
  const std::string body =
      R"({"model":"m","cache_salt":"victim-tenant","messages":[{"role":"user","content":"hi"}]})";
  absl::StatusOr<std::string> salted = WithCacheSalt(body, R"("0123abcd")");
  ASSERT_TRUE(salted.ok());
  auto reparsed = ParseInferenceRequest(Endpoint::kChatCompletions, *salted);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  EXPECT_EQ(reparsed->cache_salt, "0123abcd");
  EXPECT_EQ(salted->find("victim-tenant"), std::string::npos);

  absl::StatusOr<std::string> added = WithCacheSalt(R"({"prompt":"x"})", R"("s")");
  ASSERT_TRUE(added.ok());
  EXPECT_EQ(*added, R"({"cache_salt":"s","prompt":"x"})");
}

TEST(WithIncludeUsageTest, AddsIncludeUsageToAStreamThatDidNotAskAndTheResultParses) {
  const std::string body =
      R"({"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]})";
  auto parsed = ParseInferenceRequest(Endpoint::kChatCompletions, body);
  ASSERT_TRUE(parsed.ok());
  std::optional<std::string> edited = WithIncludeUsage(*parsed, body);
  ASSERT_TRUE(edited.has_value());
  auto reparsed = ParseInferenceRequest(Endpoint::kChatCompletions, *edited);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  EXPECT_TRUE(reparsed->include_usage);
  EXPECT_EQ(reparsed->messages.size(), 1u);
}

TEST(WithIncludeUsageTest, LeavesOtherBodiesUnchanged) {
  for (std::string body : {
           std::string(R"({"model":"m","prompt":"x"})"),  // not streaming
           std::string(R"({"prompt":"x","stream":true,"stream_options":{"include_usage":true}})"),
           std::string(R"({"prompt":"x","stream":true,"stream_options":{"include_usage":false}})"),
       }) {
    auto parsed = ParseInferenceRequest(Endpoint::kCompletions, body);
    ASSERT_TRUE(parsed.ok()) << body;
    EXPECT_FALSE(WithIncludeUsage(*parsed, body).has_value()) << body;
  }
}

TEST(UpstreamBodyTest, WithoutEditsEveryEngineGetsTheClientsBytes) {
  const std::string body = R"({"model":"m","prompt":"x"})";
  absl::StatusOr<UpstreamBody> upstream = UpstreamBody::Make(body, std::nullopt, "");
  ASSERT_TRUE(upstream.ok());
  EXPECT_EQ(upstream->For(EngineKind::kVllm).data(), body.data());  // not a copy
  EXPECT_EQ(upstream->For(EngineKind::kSglang).data(), body.data());
  EXPECT_FALSE(upstream->usage_added());
}

TEST(UpstreamBodyTest, OnlyEnginesThatHonourCacheSaltGetTheSaltedBody) {
  const std::string body = R"({"model":"m","stream":true,"prompt":"x"})";
  absl::StatusOr<UpstreamBody> upstream = UpstreamBody::Make(
      body,
      std::string(
          R"({"stream_options":{"include_usage":true},"model":"m","stream":true,"prompt":"x"})"),
      R"("salt")");
  ASSERT_TRUE(upstream.ok());
  EXPECT_TRUE(upstream->usage_added());
  EXPECT_EQ(
      upstream->For(EngineKind::kVllm),
      R"({"cache_salt":"salt","stream_options":{"include_usage":true},"model":"m","stream":true,"prompt":"x"})");
  EXPECT_EQ(upstream->For(EngineKind::kSglang),
            R"({"stream_options":{"include_usage":true},"model":"m","stream":true,"prompt":"x"})");
}

TEST(UpstreamBodyTest, VllmIsGivenTheResponseIdOfTheBackendItIsSentTo) {
  const std::string body = R"({"model":"m","input":"hi"})";
  absl::StatusOr<UpstreamBody> upstream =
      UpstreamBody::Make(body, std::nullopt, "", /*response_ids=*/true);
  ASSERT_TRUE(upstream.ok());
  EXPECT_EQ(upstream->For(EngineKind::kVllm, "resp_wr1abc"),
            R"({"request_id":"resp_wr1abc","model":"m","input":"hi"})");
  EXPECT_EQ(upstream->For(EngineKind::kVllm, "resp_wr1def"),  // a retry elsewhere: its own id
            R"({"request_id":"resp_wr1def","model":"m","input":"hi"})");
  EXPECT_EQ(upstream->For(EngineKind::kSglang, "resp_wr1abc"), body);  // ignores request_id
  absl::StatusOr<UpstreamBody> plain = UpstreamBody::Make(body, std::nullopt, "");
  EXPECT_EQ(plain->For(EngineKind::kVllm, "resp_wr1abc"), body);
}

TEST(UpstreamBodyTest, ABodyThatIsNotAnObjectCannotBeSalted) {
  EXPECT_EQ(UpstreamBody::Make("[1]", std::nullopt, R"("salt")").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace warmroute::gateway
