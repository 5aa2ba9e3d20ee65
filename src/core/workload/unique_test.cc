#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/request/tokenizer.h"
#include "core/workload/generators.h"
#include "gtest/gtest.h"

namespace warmroute::workload {
namespace {

size_t CommonPrefix(const std::string& a, const std::string& b) {
  return static_cast<size_t>(
      std::mismatch(a.begin(), a.begin() + std::min(a.size(), b.size()), b.begin()).first -
      a.begin());
}

TEST(UniqueTest, PromptsShareNoPrefixBeyondAFewCharacters) {
  WorkloadOptions options;
  options.name = "unique";
  options.num_requests = 2000;
  auto workload = MakeUnique(options, UniqueConfig{}, 1);
  std::vector<std::string> prompts;
  while (auto r = workload->Next()) {
    ASSERT_EQ(r->endpoint, request::Endpoint::kCompletions);
    prompts.push_back(r->prompt);
  }
  ASSERT_EQ(prompts.size(), 2000u);
  // Sorted, the longest common prefix of any two prompts is between neighbours.
  std::sort(prompts.begin(), prompts.end());
  size_t longest = 0;
  for (size_t i = 1; i < prompts.size(); ++i) {
    longest = std::max(longest, CommonPrefix(prompts[i - 1], prompts[i]));
  }
  EXPECT_LE(longest, 8u);  // 2,000 ids in base 26: about log26(2000^2) = 4.7 letters
  EXPECT_EQ(std::set<std::string>(prompts.begin(), prompts.end()).size(), 2000u);
}

TEST(UniqueTest, PromptsAreAbout1000Tokens) {
  WorkloadOptions options;
  options.num_requests = 20;
  auto workload = MakeUnique(options, UniqueConfig{}, 2);
  request::BuiltinTokenizer tokenizer;
  while (auto r = workload->Next()) {
    EXPECT_NEAR(static_cast<double>(tokenizer.Encode(r->prompt).size()), 1000, 1000 * 0.15);
    EXPECT_EQ(r->max_tokens, 100);
  }
}

}  // namespace
}  // namespace warmroute::workload
