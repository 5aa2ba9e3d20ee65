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

}  // namespace
}  // namespace warmroute::workload
