#include "loadgen/report.h"

#include <gtest/gtest.h>

#include "loadgen/engine_counters.h"
#include "loadgen/http_url.h"
#include "loadgen/results_json.h"

namespace warmroute::loadgen {
namespace {

BenchRun SampleRun() {
  BenchRun run;
  run.config = {.name = "warm",
                .urls = {"http://127.0.0.1:8000"},
                .workload = "support-bot",
                .requests = 2,
                .rate = 5,
                .concurrency = 0,
                .seed = 1,
                .stream = true,
                .model = "",
                .api = "responses"};
  RequestRecord ok;
  ok.id = 0;
  ok.send_s = 0;
  ok.ttft_s = 0.05;
  ok.e2e_s = 0.5;
  ok.itl_s = {0.01};
  ok.prompt_tokens = 100;
  ok.cached_tokens = 80;
  ok.completion_tokens = 2;
  ok.usage_reported = true;
  ok.http_status = 200;
  ok.backend = "r0";
  RequestRecord bad;
  bad.id = 1;
  bad.send_s = 0.2;
  bad.http_status = 200;
  bad.error_kind = error_kind::kBadResponse;
  bad.error = "not an OpenAI response | \"x\"";
  run.requests = {ok, bad};
  return run;
}

TEST(ReportTest, SummaryTableShowsMillisecondsAndHitRate) {
  const std::string table = SummaryTable("warm", Summarize(SampleRun()));
  EXPECT_NE(table.find("TTFT p50 (ms)"), std::string::npos) << table;
  EXPECT_NE(table.find("50.0"), std::string::npos) << table;
  EXPECT_NE(table.find("80.0%"), std::string::npos) << table;
  EXPECT_NE(table.find("bad_response=1"), std::string::npos) << table;
}

TEST(ReportTest, MarkdownHasErrorsBackendsAndPlots) {
  const BenchRun run = SampleRun();
  const std::string md = ReportMarkdown(run, Summarize(run), {"ttft_cdf.png"});
  EXPECT_NE(md.find("# warmroute bench: warm"), std::string::npos) << md;
  EXPECT_NE(md.find("streaming, API responses"), std::string::npos) << md;
  EXPECT_NE(md.find("| bad_response | 1 | not an OpenAI response / \"x\" |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| r0 | 1 | 100.0% |"), std::string::npos) << md;
  EXPECT_NE(md.find("![ttft_cdf.png](ttft_cdf.png)"), std::string::npos) << md;
}

TEST(ReportTest, ResultsJsonRoundTripsTheSummaryForCompare) {
  const BenchRun run = SampleRun();
  const Summary summary = Summarize(run);
  EXPECT_NE(ResultsJson(run, summary).find("\"model\":\"\",\"api\":\"responses\"}"),
            std::string::npos);
  absl::StatusOr<SavedRun> saved = ParseResultsJson(ResultsJson(run, summary), "x.json");
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->name, "warm");
  EXPECT_EQ(saved->summary.succeeded, 1u);
  EXPECT_EQ(saved->summary.errors.at("bad_response"), 1u);
  EXPECT_DOUBLE_EQ(saved->summary.ttft_s.p50, 0.05);
  ASSERT_TRUE(saved->summary.token_hit_rate.has_value());
  EXPECT_DOUBLE_EQ(*saved->summary.token_hit_rate, 0.8);
  EXPECT_FALSE(saved->summary.engine_hit_rate.has_value());
  EXPECT_EQ(saved->ttft_s, (std::vector<double>{0.05}));
  const std::string table = CompareTable({*saved, *saved});
  EXPECT_NE(table.find("warm"), std::string::npos) << table;
}

TEST(ReportTest, PolicyTableHasOneRowPerRunWithTheHeadlineFigures) {
  SavedRun cold{.name = "round_robin", .summary = {}, .ttft_s = {}};
  cold.summary.requests = 10;
  cold.summary.failed = 1;
  cold.summary.engine_hit_rate = 0.25;
  cold.summary.ttft_s = {.p50 = 0.2, .p90 = 0.3, .p99 = 0.45, .mean = 0.2, .count = 9};
  cold.summary.e2e_s = {.p50 = 1.5, .p90 = 2, .p99 = 3, .mean = 1.6, .count = 9};
  cold.summary.load_skew = 1.04;
  SavedRun warm{.name = "warmroute", .summary = {}, .ttft_s = {}};
  warm.summary.requests = 10;
  const std::string text = PolicyTable({cold, warm}, /*markdown=*/false);
  EXPECT_NE(text.find("round_robin"), std::string::npos);
  EXPECT_NE(text.find("25.0%"), std::string::npos);
  EXPECT_NE(text.find("450.0"), std::string::npos);
  EXPECT_NE(text.find("1500.0"), std::string::npos);
  EXPECT_NE(text.find("1.04"), std::string::npos);
  EXPECT_NE(text.find("1/10"), std::string::npos);
  // Not measured: shown as "-", not as zero.
  const std::string warm_row = text.substr(text.find("warmroute"));
  EXPECT_EQ(warm_row.find("0.0%"), std::string::npos);
  EXPECT_NE(warm_row.find('-'), std::string::npos);
  const std::string md = PolicyTable({cold, warm}, /*markdown=*/true);
  EXPECT_EQ(md.rfind("| policy | hit rate (engine) |", 0), 0u);
  EXPECT_NE(md.find("| warmroute |"), std::string::npos);
}

TEST(ReportTest, ParseResultsJsonRejectsOtherFiles) {
  EXPECT_FALSE(ParseResultsJson("{\"a\":1}", "a.json").ok());
  EXPECT_FALSE(ParseResultsJson("nope", "b.json").ok());
}

// SampleRun's results.json with the first `from` after "summary" replaced by `to`.
std::string Damaged(std::string_view from, std::string_view to) {
  std::string json = ResultsJson(SampleRun(), Summarize(SampleRun()));
  const size_t at = json.find(from, json.find("\"summary\""));
  EXPECT_NE(at, std::string::npos) << from;
  return json.replace(at, from.size(), to);
}

TEST(ReportTest, ParseResultsJsonRefusesBadFieldsNamingFileAndField) {
  // Each was read as garbage: -1 as 18446744073709551615, 1e300 and "x" as 0, a bad TTFT dropped
  // or plotted as inf.
  const std::pair<std::string, std::string> cases[] = {
      {Damaged(R"("requests":2)", R"("requests":-1)"),
       "x.json: summary.requests must be a whole number in [0, 2^53], got -1"},
      {Damaged(R"("sent":2)", R"("sent":1e300)"),
       "x.json: summary.sent must be a whole number in [0, 2^53], got 1e+300"},
      {Damaged(R"("succeeded":1)", R"("succeeded":"x")"),
       "x.json: summary.succeeded must be a whole number in [0, 2^53], got \"x\""},
      {Damaged(R"("ttft_s":0.05,)", R"("ttft_s":"x",)"),
       "x.json: requests[0].ttft_s must be a number in [0, 1e+08], got \"x\""},
      {Damaged(R"("ttft_s":0.05,)", R"("ttft_s":-5,)"),
       "x.json: requests[0].ttft_s must be a number in [0, 1e+08], got -5"},
      {Damaged(R"("ttft_s":0.05,)", R"("ttft_s":1e308,)"),
       "x.json: requests[0].ttft_s must be a number in [0, 1e+08], got 1e+308"},
      {Damaged(R"("token_hit_rate":0.8)", R"("token_hit_rate":2)"),
       "x.json: summary.token_hit_rate must be a number in [0, 1], got 2"},
      {Damaged(R"("requests":[)", R"("requests":5,"x":[)"),
       "x.json: requests must be an array, got 5"},
  };
  for (const auto& [json, message] : cases) {
    absl::StatusOr<SavedRun> saved = ParseResultsJson(json, "x.json");
    ASSERT_FALSE(saved.ok()) << message;
    EXPECT_EQ(saved.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(saved.status().message(), message);
  }
}

TEST(HttpUrlTest, ParsesHostPortAndPath) {
  absl::StatusOr<HttpUrl> u = ParseHttpUrl("http://127.0.0.1:8001/metrics");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 8001);
  EXPECT_EQ(u->path, "/metrics");
  u = ParseHttpUrl("http://[::1]:9/v1/");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(ApiTarget(*u, "/v1/completions"), "/v1/completions");
  u = ParseHttpUrl("http://gw");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->port, 80);
  EXPECT_FALSE(ParseHttpUrl("https://x:1").ok());
  EXPECT_FALSE(ParseHttpUrl("x:1").ok());
  EXPECT_FALSE(ParseHttpUrl("http://x:0").ok());
  EXPECT_FALSE(ParseHttpUrl("http://:80").ok());
}

TEST(EngineCountersTest, SumsTheVllmCountersOverLabels) {
  absl::StatusOr<EngineCounters> c = ReadEngineCounters(
      "# TYPE vllm:prefix_cache_hits_total counter\n"
      "vllm:prefix_cache_hits_total{engine=\"0\"} 30\n"
      "vllm:prefix_cache_queries_total{engine=\"0\"} 100\n"
      "vllm:request_success_total{finished_reason=\"stop\"} 4\n"
      "vllm:request_success_total{finished_reason=\"length\"} 6\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->prefix_cache_hits, 30);
  EXPECT_EQ(c->prefix_cache_queries, 100);
  EXPECT_EQ(c->request_success, 10);
  c = ReadEngineCounters(
      "vllm:prefix_cache_hits_total 1\nvllm:e2e_request_latency_seconds_count{engine=\"0\"} 7\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->request_success, 7);
  EXPECT_EQ(ReadEngineCounters("up 1\n").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ReadEngineCounters("<html>").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace warmroute::loadgen
