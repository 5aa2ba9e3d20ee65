#include "core/workload/workload.h"

#include <fstream>
#include <string>
#include <vector>

#include "core/workload/test_driver.h"
#include "gtest/gtest.h"

namespace warmroute::workload {
namespace {

WorkloadOptions Options(std::string name, int64_t num_requests = 60) {
  WorkloadOptions options;
  options.name = std::move(name);
  options.model = "m";
  options.num_requests = num_requests;
  options.rate_per_s = 20;
  options.num_tenants = 3;
  return options;
}

std::vector<std::string> Stream(const WorkloadOptions& options, uint64_t seed) {
  auto workload = MakeWorkload(options, seed);
  EXPECT_TRUE(workload.ok()) << workload.status();
  std::vector<std::string> out;
  for (const WorkloadRequest& r : Drain(**workload).requests) out.push_back(Describe(r));
  return out;
}

TEST(WorkloadTest, ListsTheBuiltInWorkloads) {
  EXPECT_EQ(WorkloadNames(), (std::vector<std::string>{"support-bot", "shared-prefix", "multi-turn",
                                                       "agent", "unique"}));
}

TEST(WorkloadTest, EveryWorkloadIsDeterministicFromItsSeed) {
  for (const std::string& name : WorkloadNames()) {
    SCOPED_TRACE(name);
    const auto a = Stream(Options(name), 7);
    const auto b = Stream(Options(name), 7);
    const auto c = Stream(Options(name), 8);
    ASSERT_EQ(a.size(), 60u);
    EXPECT_EQ(a, b);
    ASSERT_EQ(c.size(), 60u);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NE(a[i], c[i]) << i;
  }
}

TEST(WorkloadTest, EveryRequestCarriesModelTenantAndContent) {
  for (const std::string& name : WorkloadNames()) {
    SCOPED_TRACE(name);
    auto workload = MakeWorkload(Options(name), 1);
    ASSERT_TRUE(workload.ok());
    const Drained drained = Drain(**workload);
    for (size_t i = 0; i < drained.requests.size(); ++i) {
      const WorkloadRequest& r = drained.requests[i];
      EXPECT_EQ(r.id, i);
      EXPECT_EQ(r.model, "m");
      EXPECT_TRUE(r.tenant == "t0" || r.tenant == "t1" || r.tenant == "t2") << r.tenant;
      EXPECT_GE(r.max_tokens, 1);
      if (r.endpoint == request::Endpoint::kCompletions) {
        EXPECT_FALSE(r.prompt.empty());
        EXPECT_TRUE(r.messages.empty());
      } else {
        EXPECT_FALSE(r.messages.empty());
        EXPECT_TRUE(r.prompt.empty());
      }
    }
    EXPECT_TRUE((*workload)->Done());
  }
}

TEST(WorkloadTest, OpenLoopArrivalsAreNondecreasing) {
  for (const std::string name : {"support-bot", "shared-prefix", "unique"}) {
    SCOPED_TRACE(name);
    auto workload = MakeWorkload(Options(name, 500), 3);
    ASSERT_TRUE(workload.ok());
    Duration last{0};
    int count = 0;
    while (auto r = (*workload)->Next()) {
      EXPECT_GE(r->arrival, last);
      last = r->arrival;
      ++count;
    }
    EXPECT_EQ(count, 500);
  }
}

TEST(WorkloadTest, PoissonArrivalsHaveTheRequestedMeanRate) {
  WorkloadOptions options = Options("unique", 10000);
  options.rate_per_s = 40;
  auto workload = MakeWorkload(options, 11);
  ASSERT_TRUE(workload.ok());
  Duration last{0};
  double sum_sq_gap = 0;
  while (auto r = (*workload)->Next()) {
    const double gap = ToSeconds(r->arrival - last);
    sum_sq_gap += gap * gap;
    last = r->arrival;
  }
  const double rate = 10000 / ToSeconds(last);
  EXPECT_NEAR(rate, 40, 40 * 0.05);
  // Exponential gaps: E[gap^2] = 2 / rate^2 (a fixed-gap stream would give 1 / rate^2).
  EXPECT_NEAR(sum_sq_gap / 10000, 2.0 / (40 * 40), 0.1 * 2.0 / (40 * 40));
}

TEST(WorkloadTest, DoneOnlyAfterTheLastRequest) {
  auto workload = MakeWorkload(Options("support-bot", 2), 1);
  ASSERT_TRUE(workload.ok());
  EXPECT_FALSE((*workload)->Done());
  EXPECT_TRUE((*workload)->Next().has_value());
  EXPECT_FALSE((*workload)->Done());
  EXPECT_TRUE((*workload)->Next().has_value());
  EXPECT_TRUE((*workload)->Done());
  EXPECT_FALSE((*workload)->Next().has_value());
}

TEST(WorkloadTest, ZeroRequestsIsImmediatelyDone) {
  for (const std::string name : {"support-bot", "multi-turn", "agent", "unique"}) {
    auto workload = MakeWorkload(Options(name, 0), 1);
    ASSERT_TRUE(workload.ok());
    EXPECT_TRUE((*workload)->Done()) << name;
    EXPECT_FALSE((*workload)->Next().has_value()) << name;
  }
}

TEST(WorkloadTest, RejectsUnknownNamesAndBadOptions) {
  auto unknown = MakeWorkload(Options("chatbot"), 1);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("chatbot"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("support-bot"), std::string::npos);

  WorkloadOptions options = Options("support-bot");
  options.rate_per_s = 0;
  EXPECT_NE(MakeWorkload(options, 1).status().message().find("rate_per_s"), std::string::npos);
  options = Options("support-bot");
  options.num_tenants = 0;
  EXPECT_NE(MakeWorkload(options, 1).status().message().find("num_tenants"), std::string::npos);
  options = Options("unique", -1);
  EXPECT_NE(MakeWorkload(options, 1).status().message().find("num_requests"), std::string::npos);
  options = Options("trace:/nonexistent");
  options.trace_speed = 0;
  EXPECT_NE(MakeWorkload(options, 1).status().message().find("trace_speed"), std::string::npos);
  options = Options("trace:/nonexistent");
  options.jitter_s = -1;
  EXPECT_NE(MakeWorkload(options, 1).status().message().find("jitter_s"), std::string::npos);
  EXPECT_EQ(MakeWorkload(Options("trace:"), 1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(WorkloadTest, BuildsATraceWorkloadByName) {
  const std::string path = ::testing::TempDir() + "/workload_test_trace.jsonl";
  {
    std::ofstream file(path);
    file << R"({"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]})"
         << "\n"
         << R"({"timestamp": 10, "input_length": 100, "output_length": 0, "hash_ids": [1]})"
         << "\n";
  }
  auto workload = MakeWorkload(Options("trace:" + path), 1);
  ASSERT_TRUE(workload.ok()) << workload.status();
  const Drained drained = Drain(**workload);
  ASSERT_EQ(drained.requests.size(), 2u);
  EXPECT_EQ(drained.requests[0].max_tokens, 5);
  EXPECT_EQ(drained.requests[1].max_tokens, 1);  // output_length 0 -> at least 1
  EXPECT_EQ(drained.requests[1].arrival, std::chrono::milliseconds(10));

  auto missing = MakeWorkload(Options("trace:/nonexistent/trace.jsonl"), 1);
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/trace.jsonl"), std::string::npos);
}

}  // namespace
}  // namespace warmroute::workload
