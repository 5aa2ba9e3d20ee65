#include "loadgen/bench_result.h"

#include <gtest/gtest.h>

namespace warmroute::loadgen {
namespace {

RequestRecord Ok(uint64_t id, double send, double ttft, double e2e, int64_t prompt, int64_t cached,
                 int64_t completion, std::string backend = "") {
  RequestRecord r;
  r.id = id;
  r.send_s = send;
  r.ttft_s = ttft;
  r.e2e_s = e2e;
  r.itl_s = {0.01, 0.03};
  r.prompt_tokens = prompt;
  r.cached_tokens = cached;
  r.completion_tokens = completion;
  r.usage_reported = true;
  r.http_status = 200;
  r.backend = std::move(backend);
  return r;
}

TEST(SummarizeTest, PercentilesThroughputAndTokenHitRate) {
  BenchRun run;
  run.requests = {Ok(0, 0.0, 0.1, 1.0, 100, 0, 10), Ok(1, 1.0, 0.2, 1.0, 100, 50, 10),
                  Ok(2, 1.0, 0.3, 1.0, 200, 150, 20)};
  const Summary s = Summarize(run);
  EXPECT_EQ(s.requests, 3u);
  EXPECT_EQ(s.succeeded, 3u);
  EXPECT_EQ(s.failed, 0u);
  EXPECT_DOUBLE_EQ(s.duration_s, 2.0);  // first send 0 -> last end 2
  EXPECT_DOUBLE_EQ(s.requests_per_s, 1.5);
  EXPECT_DOUBLE_EQ(s.output_tokens_per_s, 20);
  EXPECT_DOUBLE_EQ(s.ttft_s.p50, 0.2);
  EXPECT_EQ(s.itl_s.count, 6u);
  ASSERT_TRUE(s.token_hit_rate.has_value());
  EXPECT_DOUBLE_EQ(*s.token_hit_rate, 200.0 / 400.0);
  EXPECT_FALSE(s.engine_hit_rate.has_value());
  EXPECT_FALSE(s.load_skew.has_value());
}

TEST(SummarizeTest, CountsErrorsByKindAndKeepsThemOutOfLatencies) {
  BenchRun run;
  run.requests = {Ok(0, 0.0, 0.1, 1.0, 100, 0, 10)};
  RequestRecord bad;
  bad.id = 1;
  bad.send_s = 0.5;
  bad.http_status = 503;
  bad.error_kind = HttpErrorKind(503);
  run.requests.push_back(bad);
  bad.error_kind = error_kind::kBadResponse;
  bad.ttft_s = 9;
  run.requests.push_back(bad);
  const Summary s = Summarize(run);
  EXPECT_EQ(s.succeeded, 1u);
  EXPECT_EQ(s.failed, 2u);
  EXPECT_EQ(s.errors.at("http_503"), 1u);
  EXPECT_EQ(s.errors.at("bad_response"), 1u);
  EXPECT_DOUBLE_EQ(s.ttft_s.p99, 0.1);
}

TEST(SummarizeTest, BackendShareFromTheHeaderBeatsEngineCounters) {
  BenchRun run;
  run.requests = {Ok(0, 0, 0.1, 1, 10, 0, 1, "a"), Ok(1, 0, 0.1, 1, 10, 0, 1, "a"),
                  Ok(2, 0, 0.1, 1, 10, 0, 1, "a"), Ok(3, 0, 0.1, 1, 10, 0, 1, "b")};
  run.engines = {{"http://e0/metrics", {{0, {0, 0, 0}}, {5, {30, 100, 1}}}, ""},
                 {"http://e1/metrics", {{0, {10, 10, 5}}, {5, {20, 110, 8}}}, ""}};
  const Summary s = Summarize(run);
  EXPECT_EQ(s.backend_source, "header");
  ASSERT_EQ(s.backends.size(), 2u);
  EXPECT_DOUBLE_EQ(s.backends[0].share, 0.75);
  ASSERT_TRUE(s.load_skew.has_value());
  EXPECT_DOUBLE_EQ(*s.load_skew, 1.5);  // max 3 / mean 2
  ASSERT_TRUE(s.engine_hit_rate.has_value());
  EXPECT_DOUBLE_EQ(*s.engine_hit_rate, 40.0 / 200.0);
}

TEST(SummarizeTest, BackendShareFallsBackToEngineRequestCounters) {
  BenchRun run;
  run.requests = {Ok(0, 0, 0.1, 1, 10, 0, 1)};
  run.engines = {{"http://e0/metrics", {{0, {0, 0, 0}}, {5, {0, 0, 1}}}, ""},
                 {"http://e1/metrics", {{0, {0, 0, 5}}, {5, {0, 0, 8}}}, ""},
                 {"http://down/metrics", {}, "connection refused"}};
  const Summary s = Summarize(run);
  EXPECT_EQ(s.backend_source, "engine_metrics");
  ASSERT_EQ(s.backends.size(), 2u);
  ASSERT_TRUE(s.load_skew.has_value());
  EXPECT_DOUBLE_EQ(*s.load_skew, 1.5);          // 3 / mean(1, 3)
  EXPECT_FALSE(s.engine_hit_rate.has_value());  // no queries
}

TEST(SummarizeTest, AnEmptyRunHasNoFigures) {
  const Summary s = Summarize(BenchRun{});
  EXPECT_EQ(s.requests, 0u);
  EXPECT_EQ(s.duration_s, 0);
  EXPECT_EQ(s.ttft_s.count, 0u);
  EXPECT_FALSE(s.token_hit_rate.has_value());
}

}  // namespace
}  // namespace warmroute::loadgen
