#include "gateway/observability/gateway_metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/routing/policy_registry.h"
#include "gateway/config/config.h"

namespace warmroute::gateway {
namespace {

// The value of the exposition line that starts with `series` (name and labels, as printed),
// or NaN when there is none.
double Sample(const std::string& text, const std::string& series) {
  size_t at = 0;
  while ((at = text.find(series + " ", at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') return std::stod(text.substr(at + series.size() + 1));
    at += series.size();
  }
  return std::nan("");
}

RequestRecord Record(std::string_view backend, int status, std::optional<double> ttft_s = {},
                     double e2e_s = 0, std::string_view tenant = {}) {
  RequestRecord r;
  r.route = "chat";
  r.backend = backend;
  r.status = status;
  r.reason = "least_load";
  r.ttft_s = ttft_s;
  r.e2e_s = e2e_s;
  r.tenant = tenant;
  return r;
}

class GatewayMetricsTest : public testing::Test {
 protected:
  GatewayMetricsTest()
      : backends_(*routing::MakePolicy("round_robin", {}), routing::RouterOptions{}, clock_,
                  /*seed=*/1, EjectionOptions{}) {}

  std::string Scrape() { return metrics_.Serialize(backends_, 0); }

  ManualClock clock_;
  Backends backends_;
  GatewayMetrics metrics_;
};

TEST_F(GatewayMetricsTest, RequestsCountedOnManyThreadsAllReachTheExposition) {
  RequestRecord ok = Record("a", 200, 0.05, 0.2);
  ok.reason = "cache_hit";
  ok.prompt_tokens = 100;
  ok.predicted_cached_tokens = 60;
  ok.reported_cached_tokens = 50;
  const RequestRecord failed = Record("b", 502, std::nullopt, 0.01);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        metrics_.OnRequest(ok);
        if (i % 10 == 0) metrics_.OnRequest(failed);
      }
    });
  }
  // Scrapes while the threads count see a growing count (what was folded stays counted).
  double last = 0;
  for (int i = 0; i < 20; ++i) {
    const double now =
        Sample(Scrape(), R"(warmroute_requests_total{backend="a",code="200",reason="cache_hit",route="chat"})");
    if (!std::isnan(now)) {
      EXPECT_GE(now, last);
      last = now;
    }
  }
  for (std::thread& t : threads) t.join();
  const std::string text = Scrape();
  EXPECT_EQ(Sample(text, R"(warmroute_requests_total{backend="a",code="200",reason="cache_hit",route="chat"})"),
            3000);
  EXPECT_EQ(Sample(text, R"(warmroute_requests_total{backend="b",code="502",reason="least_load",route="chat"})"),
            300);
  EXPECT_EQ(Sample(text, R"(warmroute_prompt_tokens_total{backend="a"})"), 300'000);
  EXPECT_EQ(Sample(text, R"(warmroute_predicted_cached_tokens_total{backend="a"})"), 180'000);
  EXPECT_EQ(Sample(text, R"(warmroute_reported_cached_tokens_total{backend="a"})"), 150'000);
  // b never reported usage: its token counters exist and stay 0.
  EXPECT_EQ(Sample(text, R"(warmroute_prompt_tokens_total{backend="b"})"), 0);
  EXPECT_EQ(Sample(text, R"(warmroute_time_to_first_token_seconds_count{backend="a"})"), 3000);
  EXPECT_EQ(Sample(text, R"(warmroute_time_to_first_token_seconds_count{backend="b"})"), 0);
  EXPECT_EQ(Sample(text, R"(warmroute_e2e_request_latency_seconds_count{backend="b"})"), 300);
  EXPECT_NEAR(Sample(text, R"(warmroute_e2e_request_latency_seconds_sum{backend="a"})"), 600, 1e-6);
  // A second scrape adds nothing: what was folded is not folded again.
  EXPECT_EQ(
      Sample(Scrape(), R"(warmroute_requests_total{backend="a",code="200",reason="cache_hit",route="chat"})"),
      3000);
}

TEST_F(GatewayMetricsTest, HistogramBucketsAsPrometheusCpp) {
  // le is inclusive: a TTFT of exactly 0.01 s is in the 0.01 bucket, not the next one.
  for (double ttft : {0.01, 0.0100001, 5000.0, std::nan("")}) {
    metrics_.OnRequest(Record("a", 200, ttft));
  }
  const std::string text = Scrape();
  const std::string bucket = R"(warmroute_time_to_first_token_seconds_bucket{backend="a",le=)";
  EXPECT_EQ(Sample(text, bucket + R"("0.005"})"), 0);
  EXPECT_EQ(Sample(text, bucket + R"("0.01"})"), 1);
  EXPECT_EQ(Sample(text, bucket + R"("0.02"})"), 2);
  EXPECT_EQ(Sample(text, bucket + R"("2560"})"), 2);
  EXPECT_EQ(Sample(text, bucket + R"("+Inf"})"), 4);  // 5000 s and NaN, as Observe puts them
}

TEST_F(GatewayMetricsTest, TenantSeriesAreCountedPerTenant) {
  std::thread other([&] { metrics_.OnRequest(Record("a", 200, 0.05, 0.1, "acme")); });
  other.join();
  metrics_.OnRequest(Record("a", 200, 0.05, 0.1, "acme"));
  metrics_.OnRequest(Record("", 429, std::nullopt, 0, "globex"));
  const std::string text = Scrape();
  EXPECT_EQ(Sample(text, R"(warmroute_tenant_requests_total{code="200",tenant="acme"})"), 2);
  EXPECT_EQ(Sample(text, R"(warmroute_tenant_requests_total{code="429",tenant="globex"})"), 1);
  EXPECT_EQ(Sample(text, R"(warmroute_tenant_time_to_first_token_seconds_count{tenant="acme"})"),
            2);
}

// Prewarm requests have their own series, and are not client requests.
TEST_F(GatewayMetricsTest, PrewarmRequestsAreCountedByReasonAndResult) {
  metrics_.OnPrewarm("r2", "join", true, 1500);
  metrics_.OnPrewarm("r2", "join", true, 500);
  metrics_.OnPrewarm("r2", "join", false, 700);
  metrics_.OnPrewarm("r1", "handoff", true, 300);
  const std::string text = Scrape();
  EXPECT_EQ(
      Sample(text, R"(warmroute_prewarm_requests_total{backend="r2",reason="join",result="ok"})"),
      2);
  EXPECT_EQ(
      Sample(text,
             R"(warmroute_prewarm_requests_total{backend="r2",reason="join",result="failed"})"),
      1);
  EXPECT_EQ(Sample(text, R"(warmroute_prewarm_tokens_total{backend="r2",reason="join"})"), 2000);
  EXPECT_EQ(Sample(text, R"(warmroute_prewarm_tokens_total{backend="r1",reason="handoff"})"), 300);
  EXPECT_EQ(text.find("warmroute_requests_total{"), std::string::npos);
}

TEST_F(GatewayMetricsTest, RequestsThatReusedAPrefixAreCountedPerTenant) {
  for (const int64_t cached : {0, 63, 64, 5000}) {
    RequestRecord r = Record("a", 200, 0.05, 0.1, "acme");
    r.prompt_tokens = 6000;
    r.reported_cached_tokens = cached;
    metrics_.OnRequest(r);
  }
  RequestRecord untenanted = Record("a", 200, 0.05, 0.1);
  untenanted.reported_cached_tokens = 100;
  metrics_.OnRequest(untenanted);
  metrics_.OnRequest(Record("a", 200, 0.05, 0.1, "acme"));  // no usage reported: not counted
  const std::string text = Scrape();
  EXPECT_EQ(Sample(text, R"(warmroute_prefix_sharing_requests_total{shared="true",tenant="acme"})"),
            2);
  EXPECT_EQ(
      Sample(text, R"(warmroute_prefix_sharing_requests_total{shared="false",tenant="acme"})"), 2);
  EXPECT_EQ(Sample(text, R"(warmroute_prefix_sharing_requests_total{shared="true",tenant=""})"),
            1);
}

TEST_F(GatewayMetricsTest, NormalizedRequestsAreCountedPerTenantAndRule) {
  RequestRecord both = Record("a", 200, 0.05, 0.1, "acme");
  both.normalized = {"canonical_tools", "move_to_end"};
  metrics_.OnRequest(both);
  metrics_.OnRequest(both);
  RequestRecord untenanted = Record("a", 200, 0.05, 0.1);
  untenanted.normalized = {"collapse_whitespace"};
  metrics_.OnRequest(untenanted);
  metrics_.OnRequest(Record("a", 200, 0.05, 0.1, "acme"));  // unchanged: not counted
  const std::string text = Scrape();
  EXPECT_EQ(
      Sample(text, R"(warmroute_normalize_applied_total{rule="canonical_tools",tenant="acme"})"), 2);
  EXPECT_EQ(Sample(text, R"(warmroute_normalize_applied_total{rule="move_to_end",tenant="acme"})"),
            2);
  EXPECT_EQ(
      Sample(text, R"(warmroute_normalize_applied_total{rule="collapse_whitespace",tenant=""})"), 1);
  EXPECT_EQ(text.find(R"(rule="collapse_whitespace",tenant="acme")"), std::string::npos);
}

TEST_F(GatewayMetricsTest, APoolWithoutBackendsLosesItsSeries) {
  absl::StatusOr<BackendConfig> a =
      ParseBackendJson(R"({"name": "a", "url": "http://10.0.0.1:1"})");
  absl::StatusOr<BackendConfig> b =
      ParseBackendJson(R"({"name": "b", "url": "http://10.0.0.2:1", "pool": "p2"})");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(backends_.Add(*a).ok());
  ASSERT_TRUE(backends_.Add(*b).ok());
  EXPECT_EQ(Sample(Scrape(), R"(warmroute_pool_backends{pool="p2"})"), 1);
  ASSERT_TRUE(backends_.Remove("b").ok());
  const std::string text = Scrape();
  EXPECT_TRUE(std::isnan(Sample(text, R"(warmroute_pool_backends{pool="p2"})"))) << text;
  EXPECT_TRUE(std::isnan(Sample(text, R"(warmroute_pool_healthy_backends{pool="p2"})")));
  EXPECT_EQ(Sample(text, R"(warmroute_pool_backends{pool="default"})"), 1);
}

TEST_F(GatewayMetricsTest, ABackendsKvUsageIsExportedOnceScraped) {
  absl::StatusOr<BackendConfig> a =
      ParseBackendJson(R"({"name": "a", "url": "http://10.0.0.1:1"})");
  ASSERT_TRUE(a.ok());
  absl::StatusOr<std::shared_ptr<const BackendTarget>> added = backends_.Add(*a);
  ASSERT_TRUE(added.ok());
  const std::string series = R"(warmroute_backend_kv_cache_usage_ratio{backend="a"})";
  EXPECT_TRUE(std::isnan(Sample(Scrape(), series)));  // unknown until scraped
  backends_.OnMetrics((*added)->id, {.sample = {.num_running = 1, .num_waiting = 0,
                                                .kv_usage = 0.375, .scraped_at = clock_.Now()},
                                     .kv_capacity_tokens = std::nullopt});
  EXPECT_DOUBLE_EQ(Sample(Scrape(), series), 0.375);
  ASSERT_TRUE(backends_.Remove("a").ok());
  EXPECT_TRUE(std::isnan(Sample(Scrape(), series)));
}

TEST_F(GatewayMetricsTest, KvEventSeriesFollowTheFeedAndLeaveWithTheBackend) {
  absl::StatusOr<BackendConfig> a = ParseBackendJson(
      R"({"name": "a", "url": "http://10.0.0.1:1", "kv_events": {"endpoint": "tcp://h:1"}})");
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<std::shared_ptr<const BackendTarget>> added = backends_.Add(*a);
  ASSERT_TRUE(added.ok());
  EXPECT_TRUE(std::isnan(Sample(
      Scrape(), R"(warmroute_kv_events_total{backend="a",result="applied"})")));  // not yet fed
  kv_events::BackendEventFeed feed((*added)->id, {});
  // An empty batch [ts = 1.0, []], then a message of two frames.
  const std::string empty_batch("\x92\xcb\x3f\xf0\0\0\0\0\0\0\x90", 11);
  feed.OnLive(0, empty_batch, clock_.Now());
  const std::vector<std::string_view> two_frames = {"", "x"};
  feed.OnLiveFrames(two_frames, clock_.Now());
  ASSERT_TRUE(backends_.ApplyKvEvents((*added)->id, feed).has_value());
  const std::vector<double> lags = {0.002};
  metrics_.OnKvEventLags("a", lags);  // before the first scrape: not shown
  std::string text = Scrape();
  EXPECT_EQ(Sample(text, R"(warmroute_kv_events_total{backend="a",result="applied"})"), 1) << text;
  EXPECT_EQ(Sample(text, R"(warmroute_kv_events_total{backend="a",result="malformed"})"), 1);
  EXPECT_EQ(Sample(text, R"(warmroute_kv_event_stream_state{backend="a",state="rebuilding"})"), 1);
  EXPECT_EQ(Sample(text, R"(warmroute_kv_event_stream_state{backend="a",state="precise"})"), 0);
  EXPECT_EQ(Sample(text, R"(warmroute_kv_event_resets_total{backend="a",reason="rebuild"})"), 1);
  metrics_.OnKvEventLags("a", lags);
  text = Scrape();
  EXPECT_EQ(Sample(text, R"(warmroute_kv_event_lag_seconds_count{backend="a"})"), 1) << text;
  EXPECT_EQ(Sample(text, R"(warmroute_kv_events_total{backend="a",result="malformed"})"), 1);

  ASSERT_TRUE(backends_.Remove("a").ok());
  text = Scrape();
  EXPECT_EQ(text.find("warmroute_kv_event_stream_state{"), std::string::npos) << text;
  EXPECT_EQ(text.find(R"(warmroute_kv_events_total{backend="a")"), std::string::npos);
}

// A backend that routes its two data-parallel ranks: each rank's series beside the backend's
// sums, its KV usage that of its engine core once scraped, all gone with the backend.
TEST_F(GatewayMetricsTest, EachDataParallelRankHasItsOwnSeries) {
  absl::StatusOr<BackendConfig> a = ParseBackendJson(
      R"({"name": "a", "url": "http://10.0.0.1:1",
          "kv_events": {"endpoint": "tcp://10.0.0.1:5557", "dp_ranks": 2}})");
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<std::shared_ptr<const BackendTarget>> added = backends_.Add(*a);
  ASSERT_TRUE(added.ok()) << added.status();
  // Three requests in flight, round robin over the ranks: two on one, one on the other.
  std::vector<std::string> routed;
  for (uint64_t id = 1; id <= 3; ++id) {
    routing::RoutingRequest request;
    request.id = id;
    request.model = "m";
    request.prompt_tokens = 10;
    absl::StatusOr<Dispatch> d = backends_.Route(request);
    ASSERT_TRUE(d.ok()) << d.status();
    routed.push_back(d->target->name);
  }
  const auto count = [&](const std::string& name) {
    return static_cast<double>(std::count(routed.begin(), routed.end(), name));
  };
  std::string text = Scrape();
  EXPECT_EQ(Sample(text, R"(warmroute_backend_in_flight{backend="a"})"), 3) << text;
  EXPECT_EQ(Sample(text, R"(warmroute_dp_rank_in_flight{backend="a",dp_rank="0"})"),
            count("a/rank0"));
  EXPECT_EQ(Sample(text, R"(warmroute_dp_rank_in_flight{backend="a",dp_rank="1"})"),
            count("a/rank1"));
  EXPECT_EQ(count("a/rank0") + count("a/rank1"), 3);
  EXPECT_TRUE(std::isnan(
      Sample(text, R"(warmroute_dp_rank_kv_cache_usage_ratio{backend="a",dp_rank="1"})")));

  ScrapedEngineMetrics scrape;
  scrape.sample = {.num_running = 3, .num_waiting = 0, .kv_usage = 0.5, .scraped_at = {}};
  scrape.cores = {
      {.engine = "0",
       .sample = {.num_running = 1, .num_waiting = 0, .kv_usage = 0.25, .scraped_at = {}},
       .kv_capacity_tokens = std::nullopt},
      {.engine = "1",
       .sample = {.num_running = 2, .num_waiting = 0, .kv_usage = 0.75, .scraped_at = {}},
       .kv_capacity_tokens = std::nullopt}};
  backends_.OnMetrics((*added)->id, scrape);
  text = Scrape();
  EXPECT_DOUBLE_EQ(Sample(text, R"(warmroute_backend_kv_cache_usage_ratio{backend="a"})"), 0.5);
  EXPECT_DOUBLE_EQ(
      Sample(text, R"(warmroute_dp_rank_kv_cache_usage_ratio{backend="a",dp_rank="0"})"), 0.25);
  EXPECT_DOUBLE_EQ(
      Sample(text, R"(warmroute_dp_rank_kv_cache_usage_ratio{backend="a",dp_rank="1"})"), 0.75);

  for (uint64_t id = 1; id <= 3; ++id) backends_.OnFinished(id, std::nullopt);
  EXPECT_EQ(Sample(Scrape(), R"(warmroute_dp_rank_in_flight{backend="a",dp_rank="0"})"), 0);
  ASSERT_TRUE(backends_.Remove("a").ok());
  text = Scrape();
  EXPECT_EQ(text.find("warmroute_dp_rank_in_flight{"), std::string::npos) << text;
  EXPECT_EQ(text.find("warmroute_dp_rank_kv_cache_usage_ratio{"), std::string::npos);
}

}  // namespace
}  // namespace warmroute::gateway
