#include "gateway/observability/dashboard_history.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "simdjson.h"

namespace warmroute::gateway {
namespace {

// The gateway's metrics at one moment, as /metrics would serve them: two backends, `n` requests
// each so far (prompt 100 tokens each, 60 reported cached on r0, 20 on r1), TTFTs of 0.05 s on r0
// and 0.5 s on r1, and a tenant with n requests of which n / 5 were refused.
std::vector<net::MetricSample> Metrics(int n) {
  std::string text;
  for (const auto& [backend, cached, ttft_bucket] :
       {std::tuple{"r0", 60, "0.06"}, std::tuple{"r1", 20, "0.6"}}) {
    absl::StrAppend(&text, "warmroute_requests_total{route=\"chat\",backend=\"", backend,
                    "\",code=\"200\",reason=\"prefix_match\"} ", n, "\n");
    absl::StrAppend(&text, "warmroute_prompt_tokens_total{backend=\"", backend, "\"} ", 100 * n,
                    "\n");
    absl::StrAppend(&text, "warmroute_reported_cached_tokens_total{backend=\"", backend, "\"} ",
                    cached * n, "\n");
    absl::StrAppend(&text, "warmroute_predicted_cached_tokens_total{backend=\"", backend, "\"} ",
                    cached * n, "\n");
    absl::StrAppend(&text, "warmroute_backend_in_flight{backend=\"", backend, "\"} 3\n");
    absl::StrAppend(&text, "warmroute_backend_healthy{backend=\"", backend, "\"} 1\n");
    absl::StrAppend(&text, "warmroute_backend_kv_cache_usage_ratio{backend=\"", backend,
                    "\"} 0.25\n");
    for (const char* le : {"0.02", "0.06", "0.6", "+Inf"}) {
      const bool counted = std::string(le) == "+Inf" || std::stod(le) >= std::stod(ttft_bucket);
      absl::StrAppend(&text, "warmroute_time_to_first_token_seconds_bucket{backend=\"", backend,
                      "\",le=\"", le, "\"} ", counted ? n : 0, "\n");
    }
  }
  absl::StrAppend(&text, "warmroute_tenant_requests_total{tenant=\"acme\",code=\"200\"} ", n,
                  "\n");
  absl::StrAppend(&text, "warmroute_rate_limited_total{tenant=\"acme\",limit=\"requests\"} ",
                  n / 5, "\n");
  return *net::ParsePrometheusText(text);
}

DashboardInput Input(double t, int n) {
  return {.wall_s = t,
          .metrics = Metrics(n),
          .backends = {{"r0", "up"}, {"r1", "draining"}},
          .hot_prefixes = {{.id = 0xabc, .requests_per_s = 4, .homes = {"r0"}}}};
}

simdjson::dom::element Parse(simdjson::dom::parser& parser, const std::string& json) {
  simdjson::dom::element doc;
  EXPECT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  return doc;
}

TEST(DashboardHistoryTest, ComputesTheFleetFiguresOverTheSpan) {
  DashboardHistory history({});
  for (int i = 0; i <= 20; ++i) history.Record(Input(1000 + i, 10 * i));
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = Parse(parser, history.Json());
  EXPECT_DOUBLE_EQ(double(doc["now_s"]), 1020);
  EXPECT_DOUBLE_EQ(double(doc["window_s"]), 20);
  // 200 requests per backend: cached (60 + 20) / 200 prompt tokens per request pair.
  EXPECT_DOUBLE_EQ(double(doc["fleet"]["hit_rate"]), 0.4);
  EXPECT_DOUBLE_EQ(double(doc["fleet"]["requests_per_s"]), 20);
  // Half the first tokens in (0.02, 0.06], half in (0.06, 0.6]: the median is 0.06 exactly, p99
  // interpolated near the top of (0.06, 0.6].
  EXPECT_NEAR(double(doc["fleet"]["ttft_p50_s"]), 0.06, 1e-9);
  EXPECT_NEAR(double(doc["fleet"]["ttft_p99_s"]), 0.06 + 0.54 * 0.98, 1e-9);
  const simdjson::dom::array t = doc["series"]["t"];
  EXPECT_EQ(t.size(), 21u);
  const simdjson::dom::array hit = doc["series"]["hit_rate"];
  EXPECT_TRUE(hit.at(0).is_null());
  EXPECT_DOUBLE_EQ(double(hit.at(20)), 0.4);
  const simdjson::dom::array reasons = doc["series"]["reasons"]["prefix_match"];
  EXPECT_DOUBLE_EQ(double(reasons.at(20)), 20);
}

TEST(DashboardHistoryTest, ListsBackendsTenantsAndHotPrefixes) {
  DashboardHistory history({});
  for (int i = 0; i <= 20; ++i) history.Record(Input(1000 + i, 10 * i));
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = Parse(parser, history.Json());
  const simdjson::dom::array backends = doc["backends"];
  ASSERT_EQ(backends.size(), 2u);
  EXPECT_EQ(std::string_view(backends.at(0)["name"]), "r0");
  EXPECT_EQ(std::string_view(backends.at(1)["state"]), "draining");
  EXPECT_DOUBLE_EQ(double(backends.at(0)["hit_rate"]), 0.6);
  EXPECT_DOUBLE_EQ(double(backends.at(1)["hit_rate"]), 0.2);
  EXPECT_DOUBLE_EQ(double(backends.at(0)["requests_per_s"]), 10);
  EXPECT_DOUBLE_EQ(double(backends.at(0)["kv_usage"]), 0.25);
  EXPECT_DOUBLE_EQ(double(backends.at(0)["in_flight"]), 3);
  const simdjson::dom::array tenants = doc["tenants"];
  ASSERT_EQ(tenants.size(), 1u);
  EXPECT_EQ(std::string_view(tenants.at(0)["name"]), "acme");
  EXPECT_DOUBLE_EQ(double(tenants.at(0)["requests"]), 200);
  EXPECT_DOUBLE_EQ(double(tenants.at(0)["rate_limited"]), 40);
  const simdjson::dom::array hot = doc["hot_prefixes"];
  ASSERT_EQ(hot.size(), 1u);
  EXPECT_EQ(std::string_view(hot.at(0)["id"]), "0000000000000abc");
  EXPECT_DOUBLE_EQ(double(hot.at(0)["share"]), 0.2);  // 4 of 20 requests/s
  EXPECT_EQ(std::string_view(hot.at(0)["homes"].at(0)), "r0");
}

TEST(DashboardHistoryTest, KeepsOnlyTheLastSamplesAndNeverCountsBackwards) {
  DashboardHistory history({.samples = 5});
  for (int i = 0; i < 8; ++i) history.Record(Input(1000 + i, 10 * i));
  EXPECT_EQ(history.size(), 5u);
  // A gateway restart: every counter starts again from zero.
  history.Record(Input(1008, 0));
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = Parse(parser, history.Json());
  const simdjson::dom::array rps = doc["series"]["requests_per_s"];
  EXPECT_DOUBLE_EQ(double(rps.at(4)), 0);  // not negative
  for (simdjson::dom::element v : simdjson::dom::array(doc["series"]["hit_rate"])) {
    if (!v.is_null()) {
      EXPECT_GE(double(v), 0);
    }
  }
}

TEST(DashboardHistoryTest, EmptyAndIdleHistoriesAreValidJson) {
  DashboardHistory history({});
  simdjson::dom::parser parser;
  simdjson::dom::element doc = Parse(parser, history.Json());
  EXPECT_TRUE(doc["now_s"].is_null());
  history.Record({.wall_s = 5, .metrics = {}, .backends = {}, .hot_prefixes = {}});
  history.Record({.wall_s = 6, .metrics = {}, .backends = {}, .hot_prefixes = {}});
  doc = Parse(parser, history.Json());
  EXPECT_TRUE(doc["fleet"]["hit_rate"].is_null());
  EXPECT_TRUE(doc["fleet"]["ttft_p50_s"].is_null());
  EXPECT_EQ(simdjson::dom::array(doc["backends"]).size(), 0u);
}

TEST(HistogramQuantileTest, InterpolatesAsPrometheusDoes) {
  const std::map<double, double> none;
  const double inf = std::numeric_limits<double>::infinity();
  // 10 observations in (0, 1], 10 in (1, 2]: the median is 1, p75 1.5.
  const std::map<double, double> h = {{1, 10}, {2, 20}, {inf, 20}};
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.5, none, h), 1);
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.75, none, h), 1.5);
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.25, none, h), 0.5);
  // Ranks in the +Inf bucket: its lower bound.
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.99, none, {{1, 1}, {inf, 100}}), 1);
  // Between two moments: only what happened in between.
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.5, h, {{1, 10}, {2, 30}, {inf, 30}}), 1.5);
  EXPECT_EQ(HistogramQuantile(0.5, h, h), -1);
  EXPECT_EQ(HistogramQuantile(0.5, none, none), -1);
}

}  // namespace
}  // namespace warmroute::gateway
