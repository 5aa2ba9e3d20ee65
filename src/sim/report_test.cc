#include "sim/report.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace warmroute::sim {
namespace {

RunResult TwoReplicaRun() {
  RunResult run;
  run.name = "p";
  run.arrived = run.finished = 4;
  run.prompt_tokens = 1000;
  run.cached_tokens = 750;
  run.generated_tokens = 40;
  for (double t : {0.1, 0.2, 0.3, 0.4}) run.ttft_s.Add(t);
  for (double t : {1.0, 2.0, 3.0, 4.0}) run.e2e_s.Add(t);
  run.first_arrival_s = 1;
  run.last_finish_s = 3;
  run.replicas.resize(2);
  run.replicas[0].prefill_tokens = 300;
  run.replicas[0].preemptions = 1;
  run.replicas[0].busy_s = 1.5;
  run.replicas[1].prefill_tokens = 100;
  run.replicas[1].preemptions = 2;
  run.replicas[1].busy_s = 0.5;
  run.series.interval_s = 1;
  run.series.queue = {{1, 2}, {3, 4}};
  run.series.prefill_tps = {{10, 20}, {30, 40}};
  return run;
}

TEST(ReportTest, ComputesFiguresFromTheRawRun) {
  const Figures f = ComputeFigures(TwoReplicaRun());
  EXPECT_DOUBLE_EQ(f.hit_rate, 0.75);
  EXPECT_DOUBLE_EQ(f.ttft_p50_s, 0.25);
  EXPECT_DOUBLE_EQ(f.e2e_p50_s, 2.5);
  EXPECT_DOUBLE_EQ(f.requests_per_s, 2);        // 4 finished over 2 s
  EXPECT_DOUBLE_EQ(f.output_tokens_per_s, 20);  // 40 tokens over 2 s
  EXPECT_DOUBLE_EQ(f.prefill_imbalance, 1.5);   // 300 / mean 200
  EXPECT_DOUBLE_EQ(f.busy_imbalance, 1.5);      // 1.5 / mean 1.0
  EXPECT_EQ(f.preemptions, 3);
}

TEST(ReportTest, TableAndMarkdownListPoliciesAndBounds) {
  const RunResult run = TwoReplicaRun();
  RunResult pooled = TwoReplicaRun();
  pooled.name = "pooled-cache bound";
  pooled.cached_tokens = 900;
  pooled.infinite_prompt_tokens = 1000;
  pooled.infinite_hit_tokens = 950;
  const std::string table = FormatTable({run}, &pooled);
  EXPECT_NE(table.find("75.0%"), std::string::npos) << table;
  EXPECT_NE(table.find("pooled-cache bound    90.0%"), std::string::npos) << table;
  EXPECT_NE(table.find("infinite-cache bound  95.0%"), std::string::npos) << table;
  const std::string md = FormatMarkdownTable({run}, &pooled);
  EXPECT_NE(md.find("| p | 75.0% | 250 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| *infinite-cache bound* | 95.0% |"), std::string::npos) << md;
}

TEST(ReportTest, WritesJsonWithFiguresReplicasAndSeries) {
  const std::string path = ::testing::TempDir() + "/report_test.json";
  const RunResult run = TwoReplicaRun();
  ReportHeader header;
  header.workload = "w\"q";
  ASSERT_TRUE(WriteJson(path, header, {run}, nullptr).ok());
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  const std::string json = text.str();
  EXPECT_NE(json.find("\"workload\":\"w\\\"q\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"hit_rate\":0.75"), std::string::npos) << json;
  EXPECT_NE(json.find("\"queue\":[[1,2],[3,4]]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"bounds\":{}"), std::string::npos) << json;
  std::remove(path.c_str());
  EXPECT_FALSE(WriteJson("/nonexistent-dir/x.json", ReportHeader{}, {run}, nullptr).ok());
}

TEST(ReportTest, SweepTableHasOneColumnPerLoad) {
  SweepPoint low;
  low.load = 0.3;
  low.policies = {"a", "b"};
  low.figures.resize(2);
  low.figures[0].hit_rate = 0.5;
  low.figures[0].ttft_p99_s = 0.1;
  low.figures[1].ttft_p99_s = 0.2;
  SweepPoint high = low;
  high.load = 1.1;
  const std::string md = FormatSweep({low, high}, /*markdown=*/true);
  EXPECT_NE(md.find("| policy | 30% load | 110% load |"), std::string::npos) << md;
  EXPECT_NE(md.find("| a | 100 (50.0%) | 100 (50.0%) |"), std::string::npos) << md;
}

}  // namespace
}  // namespace warmroute::sim
