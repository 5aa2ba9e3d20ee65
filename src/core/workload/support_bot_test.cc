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
  options.name = "support-bot";
  options.num_requests = n;
  options.num_tenants = 4;
  return options;
}

TEST(SupportBotTest, SystemPromptsAndQuestionsHaveTheAdvertisedSizes) {
  auto workload = MakeSupportBot(Options(200), SupportBotConfig{}, 1);
  std::set<std::string> questions;
  while (auto r = workload->Next()) {
    ASSERT_EQ(r->endpoint, request::Endpoint::kChatCompletions);
    ASSERT_EQ(r->messages.size(), 2u);
    EXPECT_EQ(r->messages[0].role, "system");
    EXPECT_EQ(r->messages[1].role, "user");
    EXPECT_NEAR(Tokens(r->messages[0].content), 3000, 3000 * 0.15);
    EXPECT_NEAR(Tokens(r->messages[1].content), 50, 50 * 0.15);
    EXPECT_EQ(r->max_tokens, 100);
    questions.insert(r->messages[1].content);
  }
  EXPECT_EQ(questions.size(), 200u);  // every question is unique
}

TEST(SupportBotTest, PopularityFollowsZipf) {
  auto workload = MakeSupportBot(Options(20000), SupportBotConfig{}, 5);
  std::map<std::string, int> count;
  std::map<std::string, std::string> tenant_of;
  while (auto r = workload->Next()) {
    const std::string& system = r->messages[0].content;
    ++count[system];
    // A tenant is a function of the system prompt.
    auto [it, inserted] = tenant_of.emplace(system, r->tenant);
    EXPECT_EQ(it->second, r->tenant);
  }
  EXPECT_EQ(count.size(), 16u);
  std::vector<int> counts;
  for (const auto& [text, n] : count) counts.push_back(n);
  std::sort(counts.rbegin(), counts.rend());
  // Zipf(1.0) over 16 items: the top item gets 1/H_16 = 29.6%, the last 1.85%.
  EXPECT_NEAR(counts.front() / 20000.0, 0.296, 0.015);
  EXPECT_NEAR(counts.back() / 20000.0, 0.0185, 0.006);
  EXPECT_GT(counts[0], 1.7 * counts[1]);  // 2x in expectation
}

TEST(SupportBotTest, SystemPromptsDifferFromTheirFirstWords) {
  SupportBotConfig config;
  config.num_system_prompts = 4;
  auto workload = MakeSupportBot(Options(400), config, 2);
  std::set<std::string> heads;
  std::set<std::string> prompts;
  while (auto r = workload->Next()) {
    prompts.insert(r->messages[0].content);
    heads.insert(r->messages[0].content.substr(0, 64));
  }
  EXPECT_EQ(prompts.size(), 4u);
  EXPECT_EQ(heads.size(), 4u);
}

}  // namespace
}  // namespace warmroute::workload
