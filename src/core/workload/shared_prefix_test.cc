#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/request/tokenizer.h"
#include "core/workload/generators.h"
#include "core/workload/test_driver.h"
#include "core/workload/workload.h"
#include "gtest/gtest.h"

namespace warmroute::workload {
namespace {

int64_t Tokens(std::string_view text) {
  return static_cast<int64_t>(request::BuiltinTokenizer().Encode(text).size());
}

WorkloadOptions Options(int64_t n) {
  WorkloadOptions options;
  options.name = "shared-prefix";
  options.num_requests = n;
  return options;
}

// The system prompt of a shared-prefix request: the text up to its "\n\n" separator.
std::string GroupPrefix(const std::string& prompt) {
  return prompt.substr(0, prompt.rfind("\n\n") + 2);
}

TEST(SharedPrefixTest, DefaultIsSglangs64GroupsOf16) {
  auto workload = MakeSharedPrefix(Options(0), SharedPrefixConfig{}, 1);
  std::map<std::string, int> per_group;
  std::set<std::string> prompts;
  int count = 0;
  while (auto r = workload->Next()) {
    ++count;
    ASSERT_EQ(r->endpoint, request::Endpoint::kCompletions);
    EXPECT_EQ(r->max_tokens, 256);
    ++per_group[GroupPrefix(r->prompt)];
    prompts.insert(r->prompt);
  }
  EXPECT_EQ(count, 1024);
  EXPECT_EQ(prompts.size(), 1024u);
  ASSERT_EQ(per_group.size(), 64u);
  for (const auto& [prefix, n] : per_group) EXPECT_EQ(n, 16);
}

TEST(SharedPrefixTest, PromptsAreA2048TokenSystemPromptAndA128TokenQuestion) {
  auto workload = MakeSharedPrefix(Options(50), SharedPrefixConfig{}, 2);
  while (auto r = workload->Next()) {
    const std::string prefix = GroupPrefix(r->prompt);
    EXPECT_NEAR(Tokens(prefix), 2048, 2048 * 0.15);
    EXPECT_NEAR(Tokens(r->prompt.substr(prefix.size())), 128, 128 * 0.15);
    EXPECT_NEAR(Tokens(r->prompt), 2048 + 128, 10);
  }
}

TEST(SharedPrefixTest, GroupsAreShuffledDeterministically) {
  auto a = MakeSharedPrefix(Options(0), SharedPrefixConfig{}, 3);
  auto b = MakeSharedPrefix(Options(0), SharedPrefixConfig{}, 3);
  std::vector<std::string> groups;
  while (auto r = a->Next()) {
    groups.push_back(GroupPrefix(r->prompt));
    EXPECT_EQ(r->prompt, b->Next()->prompt);
  }
  // Not in group order: the first 16 requests come from several groups.
  std::set<std::string> first(groups.begin(), groups.begin() + 16);
  EXPECT_GT(first.size(), 8u);
}

TEST(SharedPrefixTest, OtherCountsAreSpreadEvenlyOverTheGroups) {
  auto workload = MakeSharedPrefix(Options(1000), SharedPrefixConfig{}, 4);
  std::map<std::string, int> per_group;
  while (auto r = workload->Next()) ++per_group[GroupPrefix(r->prompt)];
  ASSERT_EQ(per_group.size(), 64u);
  for (const auto& [prefix, n] : per_group) {
    EXPECT_GE(n, 15);
    EXPECT_LE(n, 16);
  }
}

// llmd-73: llm-d's 73-capacity shape. Each of the 150 x 5 users sends one fixed prompt (its
// group's 6,000-token system prompt and its own 1,200-token question); the requests cycle through
// the 750 prompts, so request k and k + 750 are the same prompt.
TEST(SharedPrefixTest, Llmd73CyclesThroughItsUsersFixedPrompts) {
  WorkloadOptions options;
  options.name = "llmd-73";
  options.num_requests = 1600;
  options.rate_per_s = 10;
  auto workload = MakeWorkload(options, 4).value();
  std::vector<std::string> prompts;
  while (auto r = workload->Next()) {
    EXPECT_EQ(r->max_tokens, 1000);
    prompts.push_back(r->prompt);
  }
  ASSERT_EQ(prompts.size(), 1600u);
  std::set<std::string> distinct(prompts.begin(), prompts.end());
  EXPECT_EQ(distinct.size(), 750u);
  std::map<std::string, std::set<std::string>> users_of_group;
  for (const std::string& prompt : distinct) {
    users_of_group[GroupPrefix(prompt)].insert(prompt);
  }
  ASSERT_EQ(users_of_group.size(), 150u);
  for (const auto& [prefix, users] : users_of_group) EXPECT_EQ(users.size(), 5u);
  for (size_t k = 0; k + 750 < prompts.size(); ++k) ASSERT_EQ(prompts[k], prompts[k + 750]) << k;
  const std::string& first = prompts.front();
  EXPECT_NEAR(Tokens(GroupPrefix(first)), 6000, 6000 * 0.15);
  EXPECT_NEAR(Tokens(first), 6000 + 1200, 10);
}

TEST(SharedPrefixTest, UserQuestionsIsAParameterOfSharedPrefix) {
  EXPECT_TRUE(SharedPrefixConfigFromParams({{"user_questions", 1}}).value().user_questions);
  EXPECT_FALSE(SharedPrefixConfigFromParams({}).value().user_questions);
  EXPECT_FALSE(SharedPrefixConfigFromParams({{"user_questions", 0}}, Llmd73Config())
                   .value()
                   .user_questions);
  EXPECT_FALSE(SharedPrefixConfigFromParams({{"user_questions", 2}}).ok());
}

}  // namespace
}  // namespace warmroute::workload
