#include "sim/infinite_cache_bound.h"

#include <vector>

#include "core/engine/token_generator.h"
#include "core/request/tokenizer.h"
#include "gtest/gtest.h"

namespace warmroute::sim {
namespace {

std::vector<int32_t> Tokens(int n, int32_t base) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(base + i);
  return t;
}

class InfiniteCacheBoundTest : public ::testing::Test {
 protected:
  request::BuiltinTokenizer tokenizer_;
  engine::TokenGenerator generator_{tokenizer_};
};

TEST_F(InfiniteCacheBoundTest, FirstSightMissesAndRepeatHitsUpToTheLastTokenCap) {
  InfiniteCacheBound bound(16);
  const std::vector<int32_t> prompt = Tokens(64, 1000);  // exactly 4 blocks
  EXPECT_EQ(bound.Observe(prompt, 7, generator_, 1, 8), 0);
  // The repeat: all 4 blocks are known, but the last token is always computed: 3 blocks.
  EXPECT_EQ(bound.Observe(prompt, 7, generator_, 2, 8), 48);
  EXPECT_EQ(bound.prompt_tokens(), 128);
  EXPECT_EQ(bound.hit_tokens(), 48);
  EXPECT_DOUBLE_EQ(bound.HitRate(), 48.0 / 128);
}

TEST_F(InfiniteCacheBoundTest, DifferentRootOrDivergentPrefixDoesNotHit) {
  InfiniteCacheBound bound(16);
  const std::vector<int32_t> prompt = Tokens(80, 1000);
  bound.Observe(prompt, 7, generator_, 1, 4);
  EXPECT_EQ(bound.Observe(prompt, 8, generator_, 1, 4), 0);  // another model / salt
  std::vector<int32_t> divergent = prompt;
  divergent[20] = 5;  // second block differs: only the first block hits
  EXPECT_EQ(bound.Observe(divergent, 7, generator_, 1, 4), 16);
}

TEST_F(InfiniteCacheBoundTest, FollowUpHitsThePreviousAnswersGeneratedBlocks) {
  InfiniteCacheBound bound(16);
  const std::vector<int32_t> prompt = Tokens(32, 1000);
  const uint64_t seed = 99;
  const int64_t answer = 40;
  bound.Observe(prompt, 7, generator_, seed, answer);
  // Turn 2: the first prompt, the generated answer, then a new question.
  std::vector<int32_t> follow_up = prompt;
  for (int64_t i = 0; i < answer; ++i) follow_up.push_back(generator_.Token(seed, i));
  const std::vector<int32_t> question = Tokens(30, 5000);
  follow_up.insert(follow_up.end(), question.begin(), question.end());
  // Computed tokens of turn 1: 32 + 39 = 71 -> 4 full blocks (64 tokens) cached.
  EXPECT_EQ(bound.Observe(follow_up, 7, generator_, 5, 4), 64);
}

}  // namespace
}  // namespace warmroute::sim
