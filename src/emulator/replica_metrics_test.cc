#include "emulator/replica_metrics.h"

#include <map>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::emulator {
namespace {

using ::testing::HasSubstr;

engine::EngineConfig TestConfig() {
  engine::EngineConfig config;
  config.block_size = 16;
  config.num_gpu_blocks = 512;
  config.enable_prefix_caching = true;
  return config;
}

// The value of the sample line that starts with `series` (name plus labels, exactly as
// exposed), or -1 when there is none.
double Sample(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

const std::string kLabels = R"({engine="2",model_name="llama"})";

TEST(ReplicaMetricsTest, ExposesEveryVllmMetricWithModelAndEngineLabels) {
  ReplicaMetrics metrics("llama", 2, TestConfig());
  const std::string text = metrics.Serialize();
  for (const char* gauge :
       {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"}) {
    EXPECT_THAT(text, HasSubstr(std::string("# TYPE ") + gauge + " gauge\n"));
    EXPECT_EQ(Sample(text, gauge + kLabels), 0) << gauge;
  }
  for (const char* counter :
       {"vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
        "vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:num_preemptions_total"}) {
    EXPECT_THAT(text, HasSubstr(std::string("# TYPE ") + counter + " counter\n"));
    EXPECT_EQ(Sample(text, counter + kLabels), 0) << counter;
  }
  for (const char* histogram :
       {"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
        "vllm:e2e_request_latency_seconds"}) {
    EXPECT_THAT(text, HasSubstr(std::string("# TYPE ") + histogram + " histogram\n"));
    EXPECT_EQ(Sample(text, std::string(histogram) + "_count" + kLabels), 0) << histogram;
  }
}

TEST(ReplicaMetricsTest, CacheConfigInfoCarriesTheEngineConfig) {
  engine::EngineConfig config = TestConfig();
  config.enable_prefix_caching = false;
  ReplicaMetrics metrics("llama", 0, config);
  const std::string text = metrics.Serialize();
  EXPECT_THAT(text, HasSubstr("# TYPE vllm:cache_config_info gauge\n"));
  EXPECT_EQ(Sample(text, R"(vllm:cache_config_info{block_size="16",cache_dtype="auto",)"
                         R"(enable_prefix_caching="False",engine="0",num_gpu_blocks="512"})"),
            1);
}

TEST(ReplicaMetricsTest, UpdateSetsGauges) {
  ReplicaMetrics metrics("llama", 2, TestConfig());
  metrics.Update({.num_running = 3, .num_waiting = 7, .kv_cache_usage = 0.375});
  const std::string text = metrics.Serialize();
  EXPECT_EQ(Sample(text, "vllm:num_requests_running" + kLabels), 3);
  EXPECT_EQ(Sample(text, "vllm:num_requests_waiting" + kLabels), 7);
  EXPECT_EQ(Sample(text, "vllm:kv_cache_usage_perc" + kLabels), 0.375);

  metrics.Update({.num_running = 0, .num_waiting = 1, .kv_cache_usage = 0.0});
  EXPECT_EQ(Sample(metrics.Serialize(), "vllm:num_requests_running" + kLabels), 0);
}

TEST(ReplicaMetricsTest, CountersFollowCumulativeValuesAcrossUpdates) {
  ReplicaMetrics metrics("llama", 2, TestConfig());
  metrics.Update({.prefix_cache_queries = 100,
                  .prefix_cache_hits = 32,
                  .prompt_tokens = 100,
                  .generation_tokens = 5,
                  .num_preemptions = 1});
  // Repeating the same cumulative values adds nothing.
  metrics.Update({.prefix_cache_queries = 100,
                  .prefix_cache_hits = 32,
                  .prompt_tokens = 100,
                  .generation_tokens = 5,
                  .num_preemptions = 1});
  metrics.Update({.prefix_cache_queries = 250,
                  .prefix_cache_hits = 96,
                  .prompt_tokens = 250,
                  .generation_tokens = 12,
                  .num_preemptions = 1});
  const std::string text = metrics.Serialize();
  EXPECT_EQ(Sample(text, "vllm:prefix_cache_queries_total" + kLabels), 250);
  EXPECT_EQ(Sample(text, "vllm:prefix_cache_hits_total" + kLabels), 96);
  EXPECT_EQ(Sample(text, "vllm:prompt_tokens_total" + kLabels), 250);
  EXPECT_EQ(Sample(text, "vllm:generation_tokens_total" + kLabels), 12);
  EXPECT_EQ(Sample(text, "vllm:num_preemptions_total" + kLabels), 1);
}

TEST(ReplicaMetricsTest, CounterNeverDecreasesWhenTheSourceRestarts) {
  ReplicaMetrics metrics("llama", 2, TestConfig());
  metrics.Update({.generation_tokens = 50});
  // The engine restarted and counted 10 tokens since: those are new.
  metrics.Update({.generation_tokens = 10});
  EXPECT_EQ(Sample(metrics.Serialize(), "vllm:generation_tokens_total" + kLabels), 60);
  metrics.Update({.generation_tokens = 15});
  EXPECT_EQ(Sample(metrics.Serialize(), "vllm:generation_tokens_total" + kLabels), 65);
}

TEST(ReplicaMetricsTest, TimeToFirstTokenUsesVllmBuckets) {
  ReplicaMetrics metrics("llama", 2, TestConfig());
  metrics.ObserveTimeToFirstToken(0.003);
  metrics.ObserveTimeToFirstToken(0.09);
  metrics.ObserveTimeToFirstToken(3000);
  const std::string text = metrics.Serialize();
  const std::string bucket = "vllm:time_to_first_token_seconds_bucket";
  auto le = [&](const std::string& bound) {
    return Sample(text, bucket + R"({engine="2",model_name="llama",le=")" + bound + "\"}");
  };
  EXPECT_EQ(le("0.001"), 0);
  EXPECT_EQ(le("0.005"), 1);
  EXPECT_EQ(le("0.08"), 1);
  EXPECT_EQ(le("0.1"), 2);
  EXPECT_EQ(le("2560"), 2);
  EXPECT_EQ(le("+Inf"), 3);
  EXPECT_EQ(Sample(text, "vllm:time_to_first_token_seconds_count" + kLabels), 3);
  EXPECT_DOUBLE_EQ(Sample(text, "vllm:time_to_first_token_seconds_sum" + kLabels), 3000.093);
  // 22 finite boundaries and +Inf.
  size_t buckets = 0;
  for (size_t pos = text.find(bucket); pos != std::string::npos; pos = text.find(bucket, pos + 1)) {
    ++buckets;
  }
  EXPECT_EQ(buckets, 23u);
}

TEST(ReplicaMetricsTest, LatencyHistogramsUseVllmBuckets) {
  ReplicaMetrics metrics("llama", 2, TestConfig());
  metrics.ObserveInterTokenLatency(0.02);
  metrics.ObserveEndToEndLatency(0.7);
  const std::string text = metrics.Serialize();
  const std::string labels = R"({engine="2",model_name="llama",le=")";
  EXPECT_EQ(Sample(text, "vllm:inter_token_latency_seconds_bucket" + labels + "0.01\"}"), 0);
  EXPECT_EQ(Sample(text, "vllm:inter_token_latency_seconds_bucket" + labels + "0.025\"}"), 1);
  EXPECT_EQ(Sample(text, "vllm:inter_token_latency_seconds_bucket" + labels + "80\"}"), 1);
  EXPECT_EQ(Sample(text, "vllm:e2e_request_latency_seconds_bucket" + labels + "0.5\"}"), 0);
  EXPECT_EQ(Sample(text, "vllm:e2e_request_latency_seconds_bucket" + labels + "0.8\"}"), 1);
  EXPECT_EQ(Sample(text, "vllm:e2e_request_latency_seconds_bucket" + labels + "7680\"}"), 1);
  EXPECT_EQ(Sample(text, "vllm:e2e_request_latency_seconds_count" + kLabels), 1);
}

TEST(ReplicaMetricsTest, SerializeAllGivesEachMetricOnceWithEveryEnginesSeries) {
  ReplicaMetrics rank0("llama", 0, TestConfig());
  ReplicaMetrics rank1("llama", 1, TestConfig());
  engine::EngineStats busy;
  busy.num_running = 3;
  busy.num_waiting = 2;
  busy.kv_cache_usage = 0.5;
  busy.prompt_tokens = 100;
  rank1.Update(busy);
  const ReplicaMetrics* engines[] = {&rank0, &rank1};
  const std::string text = ReplicaMetrics::SerializeAll(engines);
  // One TYPE line per metric (a second one is invalid exposition), a series per engine.
  size_t types = 0;
  for (size_t at = text.find("# TYPE vllm:num_requests_running "); at != std::string::npos;
       at = text.find("# TYPE vllm:num_requests_running ", at + 1)) {
    ++types;
  }
  EXPECT_EQ(types, 1u);
  EXPECT_EQ(Sample(text, R"(vllm:num_requests_running{engine="0",model_name="llama"})"), 0);
  EXPECT_EQ(Sample(text, R"(vllm:num_requests_running{engine="1",model_name="llama"})"), 3);
  EXPECT_EQ(Sample(text, R"(vllm:num_requests_waiting{engine="1",model_name="llama"})"), 2);
  EXPECT_EQ(Sample(text, R"(vllm:kv_cache_usage_perc{engine="1",model_name="llama"})"), 0.5);
  EXPECT_EQ(Sample(text, R"(vllm:prompt_tokens_total{engine="0",model_name="llama"})"), 0);
  EXPECT_EQ(Sample(text, R"(vllm:prompt_tokens_total{engine="1",model_name="llama"})"), 100);
  EXPECT_THAT(text, HasSubstr(R"(engine="0",num_gpu_blocks="512"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(engine="1",num_gpu_blocks="512"} 1)"));
  // One engine: exactly its own exposition.
  const ReplicaMetrics* one[] = {&rank1};
  EXPECT_EQ(ReplicaMetrics::SerializeAll(one), rank1.Serialize());
}

}  // namespace
}  // namespace warmroute::emulator
