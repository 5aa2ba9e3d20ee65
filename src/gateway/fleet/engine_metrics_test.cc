#include "gateway/fleet/engine_metrics.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::gateway {
namespace {

using ::testing::HasSubstr;

const TimePoint kNow = TimePoint{} + std::chrono::seconds(42);

// What `warmroute engine` serves (emulator/replica_metrics.cc through prometheus-cpp), abridged.
constexpr std::string_view kVllmText =
    R"(# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="emu-model"} 12345
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="emu-model"} 3
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="emu-model"} 7
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="emu-model"} 0.4375
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",engine="0",num_gpu_blocks="28672"} 1
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_count{engine="0",model_name="emu-model"} 1
vllm:time_to_first_token_seconds_sum{engine="0",model_name="emu-model"} 0.003
vllm:time_to_first_token_seconds_bucket{engine="0",model_name="emu-model",le="0.001"} 0
vllm:time_to_first_token_seconds_bucket{engine="0",model_name="emu-model",le="+Inf"} 1
)";

TEST(EngineKindTest, NamesRoundTripAndUnknownListsKnown) {
  for (EngineKind kind : {EngineKind::kVllm, EngineKind::kSglang, EngineKind::kLlamaCpp,
                          EngineKind::kTrtLlm, EngineKind::kOpenAi}) {
    absl::StatusOr<EngineKind> parsed = ParseEngineKind(EngineKindName(kind));
    ASSERT_TRUE(parsed.ok()) << EngineKindName(kind);
    EXPECT_EQ(*parsed, kind);
  }
  EXPECT_EQ(EngineKindName(EngineKind::kLlamaCpp), "llamacpp");
  absl::Status status = ParseEngineKind("VLLM").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("'VLLM'"));
  EXPECT_THAT(status.message(), HasSubstr("vllm, sglang, llamacpp, trtllm, openai"));
}

TEST(EngineMetricsTest, ReadsVllmEmulatorMetricsAndCapacity) {
  absl::StatusOr<ScrapedEngineMetrics> m = ReadEngineMetrics(EngineKind::kVllm, kVllmText, kNow);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->sample.num_running, 3);
  EXPECT_EQ(m->sample.num_waiting, 7);
  EXPECT_DOUBLE_EQ(m->sample.kv_usage, 0.4375);
  EXPECT_EQ(m->sample.scraped_at, kNow);
  EXPECT_EQ(m->kv_capacity_tokens, 28672 * 16);
}

TEST(EngineMetricsTest, ReadsOlderVllmGpuCacheUsageName) {
  constexpr std::string_view text = R"(vllm:num_requests_running{model_name="m"} 1.0
vllm:num_requests_swapped{model_name="m"} 0.0
vllm:num_requests_waiting{model_name="m"} 2.0
vllm:gpu_cache_usage_perc{model_name="m"} 0.25
)";
  absl::StatusOr<ScrapedEngineMetrics> m = ReadEngineMetrics(EngineKind::kVllm, text, kNow);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->sample.num_running, 1);
  EXPECT_EQ(m->sample.num_waiting, 2);
  EXPECT_DOUBLE_EQ(m->sample.kv_usage, 0.25);
  EXPECT_EQ(m->kv_capacity_tokens, std::nullopt);  // no cache_config_info
}

// Several data-parallel engines (or models) on one server: counts and capacity add up, the KV
// usage fraction is their mean.
TEST(EngineMetricsTest, SumsOverLabelSets) {
  constexpr std::string_view text = R"(vllm:num_requests_running{engine="0",model_name="m"} 3
vllm:num_requests_running{engine="1",model_name="m"} 4
vllm:num_requests_waiting{engine="0",model_name="m"} 1
vllm:num_requests_waiting{engine="1",model_name="m"} 5
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.2
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.6
vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="1000"} 1
vllm:cache_config_info{block_size="16",engine="1",num_gpu_blocks="500"} 1
)";
  absl::StatusOr<ScrapedEngineMetrics> m = ReadEngineMetrics(EngineKind::kVllm, text, kNow);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->sample.num_running, 7);
  EXPECT_EQ(m->sample.num_waiting, 6);
  EXPECT_DOUBLE_EQ(m->sample.kv_usage, 0.4);
  EXPECT_EQ(m->kv_capacity_tokens, 1500 * 16);
}

TEST(EngineMetricsTest, ReadsEachEngineCoreOnItsOwnInEngineOrder) {
  // Engines 10 and 2 (numeric order, not text order: 2 first), as a replica of the emulator
  // whose ranks are engines i*D + r labels them.
  constexpr std::string_view text = R"(vllm:num_requests_running{engine="10",model_name="m"} 3
vllm:num_requests_running{engine="2",model_name="m"} 4
vllm:num_requests_waiting{engine="10",model_name="m"} 1
vllm:num_requests_waiting{engine="2",model_name="m"} 5
vllm:kv_cache_usage_perc{engine="10",model_name="m"} 0.2
vllm:kv_cache_usage_perc{engine="2",model_name="m"} 0.6
vllm:cache_config_info{block_size="16",engine="10",num_gpu_blocks="1000"} 1
vllm:cache_config_info{block_size="16",engine="2",num_gpu_blocks="500"} 1
)";
  absl::StatusOr<ScrapedEngineMetrics> m = ReadEngineMetrics(EngineKind::kVllm, text, kNow);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->cores.size(), 2u);
  EXPECT_EQ(m->cores[0].engine, "2");
  EXPECT_EQ(m->cores[0].sample.num_running, 4);
  EXPECT_EQ(m->cores[0].sample.num_waiting, 5);
  EXPECT_DOUBLE_EQ(m->cores[0].sample.kv_usage, 0.6);
  EXPECT_EQ(m->cores[0].kv_capacity_tokens, 500 * 16);
  EXPECT_EQ(m->cores[0].sample.scraped_at, kNow);
  EXPECT_EQ(m->cores[1].engine, "10");
  EXPECT_EQ(m->cores[1].sample.num_running, 3);
  EXPECT_EQ(m->cores[1].kv_capacity_tokens, 1000 * 16);
  EXPECT_EQ(m->sample.num_running, 7);  // the whole as before
}

TEST(EngineMetricsTest, NoCoresWithoutAnEngineLabelOrWhenACoreDoesNotRead) {
  absl::StatusOr<ScrapedEngineMetrics> m = ReadEngineMetrics(EngineKind::kSglang, R"(
sglang:num_running_reqs{model_name="m"} 1
sglang:num_queue_reqs{model_name="m"} 0
sglang:token_usage{model_name="m"} 0.5
)",
                                                             kNow);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->cores.empty());
  // Engine 1 has no waiting series of its own: the cores are unknown, the whole still reads.
  m = ReadEngineMetrics(EngineKind::kVllm, R"(vllm:num_requests_running{engine="0"} 3
vllm:num_requests_running{engine="1"} 4
vllm:num_requests_waiting{engine="0"} 1
vllm:kv_cache_usage_perc{engine="0"} 0.2
vllm:kv_cache_usage_perc{engine="1"} 0.6
)",
                        kNow);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->sample.num_running, 7);
  EXPECT_TRUE(m->cores.empty());
}

// Each label is at most 2^30, so one sample is at most 2^60 tokens, and nine of them once
// overflowed the sum (a scrape crashed the gateway's sanitizer build).
TEST(EngineMetricsTest, ImplausibleVllmCapacityIsUnknown) {
  std::string text(kVllmText);
  for (int engine = 1; engine <= 9; ++engine) {
    text += absl::StrCat("vllm:cache_config_info{block_size=\"1073741824\",engine=\"", engine,
                         "\",num_gpu_blocks=\"1073741824\"} 1\n");
  }
  absl::StatusOr<ScrapedEngineMetrics> m = ReadEngineMetrics(EngineKind::kVllm, text, kNow);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->kv_capacity_tokens, std::nullopt);
  // Up to 2^40 tokens in all is taken.
  std::string large(kVllmText);
  large.replace(large.find("num_gpu_blocks=\"28672\""), 22, "num_gpu_blocks=\"1073741824\"");
  large.replace(large.find("block_size=\"16\""), 15, "block_size=\"1024\"");
  m = ReadEngineMetrics(EngineKind::kVllm, large, kNow);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->kv_capacity_tokens, int64_t{1} << 40);
}

TEST(EngineMetricsTest, UnknownVllmCapacityWhenBlocksAreNotANumber) {
  std::string text(kVllmText);
  text.replace(text.find("num_gpu_blocks=\"28672\""), 22, "num_gpu_blocks=\"None\"");
  absl::StatusOr<ScrapedEngineMetrics> m = ReadEngineMetrics(EngineKind::kVllm, text, kNow);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->sample.num_running, 3);
  EXPECT_EQ(m->kv_capacity_tokens, std::nullopt);
}

TEST(EngineMetricsTest, ReadsSglangMetrics) {
  constexpr std::string_view text =
      R"(# HELP sglang:prompt_tokens_total Number of prefill tokens processed.
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 8.128902e+06
# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct"} 12.0
# HELP sglang:num_queue_reqs The number of requests in the waiting queue.
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct"} 4.0
# HELP sglang:token_usage The token usage.
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.28
# HELP sglang:cache_hit_rate The prefix cache hit rate.
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0075
)";
  absl::StatusOr<ScrapedEngineMetrics> m = ReadEngineMetrics(EngineKind::kSglang, text, kNow);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->sample.num_running, 12);
  EXPECT_EQ(m->sample.num_waiting, 4);
  EXPECT_DOUBLE_EQ(m->sample.kv_usage, 0.28);
  EXPECT_EQ(m->kv_capacity_tokens, std::nullopt);
}

TEST(EngineMetricsTest, ReadsLlamaCppMetricsWithAndWithoutKvUsage) {
  constexpr std::string_view text =
      R"(# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 6886
# HELP llamacpp:kv_cache_usage_ratio KV-cache usage. 1 means 100 percent usage.
# TYPE llamacpp:kv_cache_usage_ratio gauge
llamacpp:kv_cache_usage_ratio 0.125
# HELP llamacpp:requests_processing Number of requests processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 2
# HELP llamacpp:requests_deferred Number of requests deferred.
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 5
)";
  absl::StatusOr<ScrapedEngineMetrics> m = ReadEngineMetrics(EngineKind::kLlamaCpp, text, kNow);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->sample.num_running, 2);
  EXPECT_EQ(m->sample.num_waiting, 5);
  EXPECT_DOUBLE_EQ(m->sample.kv_usage, 0.125);

  // Recent llama.cpp builds dropped the KV gauges: still a sample, with kv_usage 0.
  m = ReadEngineMetrics(EngineKind::kLlamaCpp,
                        "llamacpp:requests_processing 1\nllamacpp:requests_deferred 0\n", kNow);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->sample.num_running, 1);
  EXPECT_EQ(m->sample.kv_usage, 0);
}

TEST(EngineMetricsTest, KindsWithoutLoadMetricsAreNotFound) {
  for (EngineKind kind : {EngineKind::kTrtLlm, EngineKind::kOpenAi}) {
    EXPECT_FALSE(ExposesLoadMetrics(kind));
    absl::Status status = ReadEngineMetrics(kind, kVllmText, kNow).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(status.message(),
                HasSubstr(absl::StrCat("engine kind ", std::string(EngineKindName(kind)),
                                       " exposes no load metrics")));
  }
}

TEST(EngineMetricsTest, MissingMetricIsFailedPreconditionNamingIt) {
  // vLLM text read as SGLang: the wrong kind configured.
  absl::Status status = ReadEngineMetrics(EngineKind::kSglang, kVllmText, kNow).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("sglang:num_running_reqs"));

  status = ReadEngineMetrics(EngineKind::kVllm,
                             "vllm:num_requests_running 1\nvllm:kv_cache_usage_perc 0.5\n", kNow)
               .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("vllm:num_requests_waiting"));

  status = ReadEngineMetrics(EngineKind::kVllm,
                             "vllm:num_requests_running 1\nvllm:num_requests_waiting 0\n", kNow)
               .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("vllm:kv_cache_usage_perc"));
  EXPECT_THAT(status.message(), HasSubstr("vllm:gpu_cache_usage_perc"));

  status = ReadEngineMetrics(EngineKind::kLlamaCpp, "", kNow).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("llamacpp:requests_processing"));
}

TEST(EngineMetricsTest, InvalidValuesAndTextAreInvalidArgument) {
  const std::string valid_tail = "vllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 0.5\n";
  for (std::string running : {"NaN", "-1", "+Inf", "1e300"}) {
    absl::Status status =
        ReadEngineMetrics(EngineKind::kVllm,
                          "vllm:num_requests_running " + running + "\n" + valid_tail, kNow)
            .status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << running;
    EXPECT_THAT(status.message(), HasSubstr("vllm:num_requests_running is not a count")) << running;
  }
  absl::Status status =
      ReadEngineMetrics(EngineKind::kVllm,
                        "vllm:num_requests_running 1\nvllm:num_requests_waiting 0\n"
                        "vllm:kv_cache_usage_perc 43.5\n",
                        kNow)
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("not a fraction"));

  status = ReadEngineMetrics(EngineKind::kVllm, "<html>502 Bad Gateway</html>", kNow).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("line 1"));
}

TEST(EngineMetricsTest, RoundsCountsAndClampsFractionNoise) {
  absl::StatusOr<ScrapedEngineMetrics> m =
      ReadEngineMetrics(EngineKind::kVllm,
                        "vllm:num_requests_running 2.6\nvllm:num_requests_waiting 0\n"
                        "vllm:kv_cache_usage_perc 1.000001\n",
                        kNow);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->sample.num_running, 3);
  EXPECT_EQ(m->sample.kv_usage, 1.0);
}

}  // namespace
}  // namespace warmroute::gateway
