#include "gateway/fleet/prewarmer.h"

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <string>

#include "core/routing/policies/policy_test_util.h"
#include "core/routing/policy_registry.h"
#include "gateway/config/config.h"
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

BackendConfig PrewarmBackend(std::string_view json) {
  absl::StatusOr<BackendConfig> config = ParseBackendJson(json);
  EXPECT_TRUE(config.ok()) << config.status();
  return *config;
}

// A backend routing its data-parallel ranks leaves whole: a prefix that its ranks alone hold is
// handed off to a backend that stays, none of its ranks counting as holding it for another.
TEST(PrewarmerTest, ALeavingBackendsRanksAreNotWhereItsPrefixesAreHandedOff) {
  ManualClock clock;
  Backends backends(*routing::MakePolicy("warmroute", {}), routing::RouterOptions{}, clock,
                    /*seed=*/1, EjectionOptions{});
  absl::StatusOr<std::shared_ptr<const BackendTarget>> a = backends.Add(PrewarmBackend(
      R"({"name": "a", "url": "http://10.0.0.1:8000",
          "kv_events": {"endpoint": "tcp://10.0.0.1:5557", "dp_ranks": 2}})"));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(backends.Add(PrewarmBackend(R"({"name": "b", "url": "http://10.0.0.2:8000"})")).ok());
  ASSERT_TRUE(backends.Add(PrewarmBackend(R"({"name": "c", "url": "http://10.0.0.3:8000"})")).ok());
  boost::asio::io_context io;
  GatewayMetrics metrics;
  std::atomic<uint64_t> next_id{1000};
  Prewarmer prewarmer(io.get_executor(), backends, metrics, clock, next_id,
                      routing::PrewarmOptions{}, net::UpstreamTimeouts{});
  constexpr int kPrefixes = 6;
  uint64_t id = 1;
  for (uint64_t seed = 1; seed <= kPrefixes; ++seed) {
    const routing::RoutingRequest sample =
        routing::testing::Request(0, routing::testing::Chain(seed, 80), 1280);
    for (int i = 0; i < Prewarmer::kMinSampleRequests; ++i) {
      if (prewarmer.Count(sample)) {
        prewarmer.Keep(sample, request::Endpoint::kChatCompletions, R"({"model":"m"})");
      }
    }
    // Served by both of a's ranks, by no other backend.
    for (routing::BackendId rank : (*a)->rank_targets) {
      routing::RoutingRequest request = sample;
      request.id = id++;
      request.placement = routing::Placement::kPinned;
      request.pinned = rank;
      ASSERT_TRUE(backends.Route(request).ok());
      backends.CommitInsert(request.id);
      backends.OnFinished(request.id, std::nullopt);
    }
  }
  prewarmer.OnLeaving("a");
  EXPECT_EQ(prewarmer.counters().planned, kPrefixes);
}

}  // namespace
}  // namespace warmroute::gateway
