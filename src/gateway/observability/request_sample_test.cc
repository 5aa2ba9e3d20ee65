#include "gateway/observability/request_sample.h"

#include "core/workload/request_log.h"
#include "gtest/gtest.h"

namespace warmroute::gateway {
namespace {

TEST(RequestSampleTest, PutsTimestampAndTenantFirstOnOneLine) {
  EXPECT_EQ(RequestSampleLine("{\"model\":\"m\",\n  \"prompt\":\"a\\nb\"}", "acme", 12.5),
            "{\"timestamp\":12.500,\"tenant\":\"acme\",\"model\":\"m\",   \"prompt\":\"a\\nb\"}");
  EXPECT_EQ(RequestSampleLine(" { } ", "", 1), "{\"timestamp\":1.000 } ");
  EXPECT_EQ(RequestSampleLine("[1]", "", 1), "");
  EXPECT_EQ(RequestSampleLine("{", "", 1), "");
  // What the gateway writes is what analyze and trace:FILE read.
  const std::string line = RequestSampleLine(
      R"({"model":"m","messages":[{"role":"user","content":"hi"}]})", "t\"1", 100);
  absl::StatusOr<std::vector<workload::LoggedRequest>> log =
      workload::ParseRequestLog(line + "\n", "sample.jsonl");
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_DOUBLE_EQ((*log)[0].timestamp_s, 100);
  EXPECT_EQ((*log)[0].tenant, "t\"1");
}

TEST(RequestSampleTest, TakesAboutTheRateAndTheSameIdsEveryTime) {
  int taken = 0;
  for (uint64_t id = 1; id <= 100'000; ++id) taken += SampleTakes(id, 0.1) ? 1 : 0;
  EXPECT_NEAR(taken, 10'000, 400);
  EXPECT_EQ(SampleTakes(42, 0.1), SampleTakes(42, 0.1));
  EXPECT_TRUE(SampleTakes(7, 1));
  EXPECT_FALSE(SampleTakes(7, 0));
}

}  // namespace
}  // namespace warmroute::gateway
