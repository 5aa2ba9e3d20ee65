#include <map>
#include <set>
#include <string>

#include "core/request/tokenizer.h"
#include "core/workload/generators.h"
#include "core/workload/test_driver.h"
#include "gtest/gtest.h"

namespace warmroute::workload {
namespace {

int64_t Tokens(std::string_view text) {
  return static_cast<int64_t>(request::BuiltinTokenizer().Encode(text).size());
}

WorkloadOptions Options(int64_t n) {
  WorkloadOptions options;
  options.name = "agent";
  options.num_requests = n;
  options.num_tenants = 4;
  return options;
}

TEST(AgentTest, TrajectoriesGrowByAnswerAndToolResult) {
  auto workload = MakeAgent(Options(80), AgentConfig{}, 1);  // 10 trajectories of 8 steps
  const Drained drained = Drain(*workload);
  ASSERT_EQ(drained.requests.size(), 80u);
  std::map<uint64_t, std::vector<WorkloadRequest>> trajectories;
  for (const WorkloadRequest& r : drained.requests) trajectories[r.session].push_back(r);
  ASSERT_EQ(trajectories.size(), 10u);
  for (const auto& [session, steps] : trajectories) {
    ASSERT_EQ(steps.size(), 8u);
    for (size_t k = 0; k < steps.size(); ++k) {
      const WorkloadRequest& r = steps[k];
      EXPECT_EQ(r.turn, static_cast<int>(k));
      EXPECT_EQ(r.max_tokens, 150);
      ASSERT_EQ(r.messages.size(), 2 + 2 * k);
      EXPECT_EQ(r.messages[0].role, "system");
      EXPECT_EQ(r.messages[1].role, "user");
      EXPECT_EQ(r.messages[0].content, steps[0].messages[0].content);
      if (k > 0) {
        EXPECT_EQ(r.messages[2 * k].role, "assistant");
        EXPECT_EQ(r.messages[2 * k].content, drained.answers[steps[k - 1].id]);
        EXPECT_EQ(r.messages[2 * k + 1].role, "tool");
        EXPECT_NEAR(Tokens(r.messages[2 * k + 1].content), 300, 300 * 0.15);
      }
    }
  }
}

TEST(AgentTest, ToolDefinitionsAreAbout6000TokensPerAgentTypeAndShared) {
  auto workload = MakeAgent(Options(400), AgentConfig{}, 2);
  std::map<std::string, std::set<std::string>> tenants_of_prefix;
  while (auto r = workload->Next()) {
    tenants_of_prefix[r->messages[0].content].insert(r->tenant);
    EXPECT_NEAR(Tokens(r->messages[1].content), 150, 150 * 0.15);
  }
  EXPECT_EQ(tenants_of_prefix.size(), 4u);  // 4 agent types, 50 trajectories
  for (const auto& [prefix, tenants] : tenants_of_prefix) {
    EXPECT_NEAR(Tokens(prefix), 6000, 6000 * 0.15);
    EXPECT_NE(prefix.find(R"({"type": "function", "function": {"name": )"), std::string::npos);
    EXPECT_EQ(tenants.size(), 1u);  // tenant by agent type
  }
}

TEST(AgentTest, NextStepWaitsForTheToolLatency) {
  auto workload = MakeAgent(Options(16), AgentConfig{}, 3);
  const WorkloadRequest first = *workload->Next();
  const WorkloadRequest other = *workload->Next();
  EXPECT_EQ(first.turn, 0);
  EXPECT_EQ(other.turn, 0);
  EXPECT_FALSE(workload->Next().has_value());
  workload->OnResponse(first.id, "call search", first.arrival + std::chrono::seconds(1));
  const auto step = workload->Next();
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(step->session, first.session);
  EXPECT_GT(step->arrival, first.arrival + std::chrono::seconds(1));
}

}  // namespace
}  // namespace warmroute::workload
