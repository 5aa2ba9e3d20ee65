#include "gateway/proxy/routes.h"

#include <gtest/gtest.h>

namespace warmroute::gateway {
namespace {

TEST(MatchRouteTest, GenerationPathsArePromptRoutes) {
  struct Case {
    const char* path;
    const char* name;
    request::Endpoint endpoint;
  };
  for (const Case& c : {Case{"/v1/chat/completions", "chat", request::Endpoint::kChatCompletions},
                        Case{"/v1/completions", "completions", request::Endpoint::kCompletions},
                        Case{"/v1/responses", "responses", request::Endpoint::kResponses},
                        Case{"/v1/messages", "messages", request::Endpoint::kMessages}}) {
    const RouteMatch m = MatchRoute("POST", c.path);
    ASSERT_NE(m.route, nullptr) << c.path;
    EXPECT_EQ(m.route->name, c.name);
    EXPECT_EQ(m.route->body, RouteBody::kPrompt);
    EXPECT_EQ(m.route->endpoint, c.endpoint);
    EXPECT_EQ(MatchRoute("GET", c.path).allow, "POST") << c.path;
  }
}

TEST(MatchRouteTest, PoolingAndTokenizerPathsNameOnlyAModel) {
  for (const char* path : {"/v1/embeddings", "/v1/rerank", "/rerank", "/v1/score", "/score",
                           "/pooling", "/classify", "/tokenize", "/detokenize"}) {
    const RouteMatch m = MatchRoute("POST", path);
    ASSERT_NE(m.route, nullptr) << path;
    EXPECT_EQ(m.route->body, RouteBody::kModel) << path;
    EXPECT_EQ(MatchRoute("PUT", path).route, nullptr);
    EXPECT_EQ(MatchRoute("PUT", path).allow, "POST");
  }
  EXPECT_EQ(MatchRoute("POST", "/v1/rerank").route->name, "rerank");
  EXPECT_EQ(MatchRoute("POST", "/rerank").route->name, "rerank");
}

TEST(MatchRouteTest, AudioUploadsAreStreamed) {
  for (const char* path : {"/v1/audio/transcriptions", "/v1/audio/translations"}) {
    const RouteMatch m = MatchRoute("POST", path);
    ASSERT_NE(m.route, nullptr) << path;
    EXPECT_EQ(m.route->body, RouteBody::kStream);
    EXPECT_EQ(m.route->name, "audio");
  }
}

TEST(MatchRouteTest, AStoredResponsesPathsCarryItsId) {
  RouteMatch m = MatchRoute("GET", "/v1/responses/resp_wr1abc");
  ASSERT_NE(m.route, nullptr);
  EXPECT_TRUE(m.route->response_in_path);
  EXPECT_EQ(m.route->body, RouteBody::kNone);
  EXPECT_EQ(m.route->name, "responses");
  EXPECT_EQ(m.response_id, "resp_wr1abc");
  EXPECT_EQ(MatchRoute("DELETE", "/v1/responses/resp_1").response_id, "resp_1");
  EXPECT_EQ(MatchRoute("POST", "/v1/responses/resp_1/cancel").response_id, "resp_1");
  EXPECT_EQ(MatchRoute("GET", "/v1/responses/resp_1/input_items").response_id, "resp_1");
  EXPECT_EQ(MatchRoute("POST", "/v1/responses/resp_1").allow, "GET, DELETE");
  EXPECT_EQ(MatchRoute("GET", "/v1/responses/resp_1/cancel").allow, "POST");
  EXPECT_EQ(MatchRoute("GET", "/v1/responses/").route, nullptr);
  EXPECT_EQ(MatchRoute("GET", "/v1/responses/").allow, "");
  EXPECT_EQ(MatchRoute("GET", "/v1/responses/resp_1/other").route, nullptr);
}

TEST(MatchRouteTest, OtherPathsAreNotRouted) {
  for (const char* path : {"/", "/v1/models", "/health", "/metrics", "/admin/backends",
                           "/v1/chat/completions/", "/v1/embedding", "/V1/completions"}) {
    const RouteMatch m = MatchRoute("POST", path);
    EXPECT_EQ(m.route, nullptr) << path;
    EXPECT_EQ(m.allow, "") << path;
  }
}

}  // namespace
}  // namespace warmroute::gateway
