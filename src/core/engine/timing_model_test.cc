#include "core/engine/timing_model.h"

#include <chrono>
#include <set>
#include <string>

#include "gtest/gtest.h"

namespace warmroute::engine {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

TEST(TimingModelTest, TinyProfileFollowsTheFormulaExactly) {
  const TimingProfile* tiny = FindTimingProfile("tiny");
  ASSERT_NE(tiny, nullptr);
  // 1 ms + 100 x 10 µs + 10 x 0.1 ms + 5000 x 0 = 3 ms.
  EXPECT_EQ(StepDuration(*tiny, {.prefill_tokens = 100, .decode_seqs = 10, .context_tokens = 5000},
                         nullptr),
            milliseconds(3));
  EXPECT_EQ(StepDuration(*tiny, {}, nullptr), milliseconds(1));
  // Without jitter in the profile an Rng changes nothing.
  Rng rng(7);
  EXPECT_EQ(StepDuration(*tiny, {.prefill_tokens = 1}, &rng), microseconds(1010));
}

TEST(TimingModelTest, EveryCoefficientContributes) {
  const TimingProfile profile{.name = "t",
                              .model = "t",
                              .step_overhead_s = 1e-3,
                              .per_prefill_token_s = 2e-6,
                              .per_decode_seq_s = 3e-6,
                              .per_context_token_s = 4e-9,
                              .kv_bytes_per_token = 1,
                              .default_capacity_tokens = 1,
                              .max_model_len = 1,
                              .jitter_stddev_frac = 0};
  // 1e6 + 2e3 * 10 + 3e3 * 7 + 4 * 1000 ns.
  EXPECT_EQ(StepDuration(profile, {.prefill_tokens = 10, .decode_seqs = 7, .context_tokens = 1000},
                         nullptr)
                .count(),
            1'000'000 + 20'000 + 21'000 + 4'000);
}

TEST(TimingModelTest, JitterIsDeterministicPerSeedAndBounded) {
  const TimingProfile* p = FindTimingProfile("llama-3.1-8b-h100");
  ASSERT_NE(p, nullptr);
  const StepShape shape{.prefill_tokens = 2048, .decode_seqs = 12, .context_tokens = 40000};
  const Duration exact = StepDuration(*p, shape, nullptr);
  Rng a(42), b(42), c(43);
  bool differs_from_exact = false;
  bool seeds_differ = false;
  for (int i = 0; i < 1000; ++i) {
    const Duration da = StepDuration(*p, shape, &a);
    const Duration db = StepDuration(*p, shape, &b);
    const Duration dc = StepDuration(*p, shape, &c);
    EXPECT_EQ(da, db);
    EXPECT_GE(da.count(), exact.count() / 2);
    EXPECT_LE(da.count(), exact.count() * 13 / 10);  // 3% stddev: 10 sigma
    differs_from_exact |= da != exact;
    seeds_differ |= da != dc;
  }
  EXPECT_TRUE(differs_from_exact);
  EXPECT_TRUE(seeds_differ);
}

TEST(TimingModelTest, JitterNeverShrinksBelowHalf) {
  TimingProfile p = *FindTimingProfile("tiny");
  p.jitter_stddev_frac = 10;  // huge: most draws would go negative without the floor
  Rng rng(1);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_GE(StepDuration(p, {}, &rng), microseconds(500));
  }
}

TEST(TimingModelTest, LooksUpProfilesByName) {
  EXPECT_EQ(FindTimingProfile("no-such-gpu"), nullptr);
  std::set<std::string> names;
  for (const TimingProfile& p : TimingProfiles()) {
    EXPECT_EQ(FindTimingProfile(p.name), &p);
    names.insert(std::string(p.name));
  }
  EXPECT_EQ(names, (std::set<std::string>{"tiny", "llama-3.1-8b-h100", "llama-3.1-70b-tp4-h100",
                                          "llama-3.1-70b-tp8-h200"}));
  EXPECT_EQ(TimingProfiles().front().name, "tiny");
}

TEST(TimingModelTest, NamedProfilesMatchPublishedFigures) {
  const TimingProfile* p8 = FindTimingProfile("llama-3.1-8b-h100");
  ASSERT_NE(p8, nullptr);
  EXPECT_NEAR(p8->step_overhead_s, 6e-3, 1e-3);
  EXPECT_NEAR(p8->per_prefill_token_s, 35e-6, 5e-6);
  EXPECT_EQ(p8->kv_bytes_per_token, 128 * 1024);
  EXPECT_NEAR(static_cast<double>(p8->default_capacity_tokens), 440e3, 20e3);
  EXPECT_EQ(p8->max_model_len, 131072);
  EXPECT_NEAR(p8->per_context_token_s, 39e-9, 1e-9);

  const TimingProfile* p70 = FindTimingProfile("llama-3.1-70b-tp4-h100");
  ASSERT_NE(p70, nullptr);
  EXPECT_NEAR(p70->step_overhead_s, 15e-3, 4e-3);
  EXPECT_NEAR(p70->per_prefill_token_s, 79.9e-6, 2e-6);  // Preble's fit
  EXPECT_EQ(p70->kv_bytes_per_token, 320 * 1024);
  EXPECT_NEAR(static_cast<double>(p70->default_capacity_tokens), 460e3, 20e3);

  // H200 x8: more memory and bandwidth than H100 x4, so faster and larger in every respect.
  const TimingProfile* h200 = FindTimingProfile("llama-3.1-70b-tp8-h200");
  ASSERT_NE(h200, nullptr);
  EXPECT_LT(h200->step_overhead_s, p70->step_overhead_s);
  EXPECT_LT(h200->per_prefill_token_s, p70->per_prefill_token_s);
  EXPECT_LT(h200->per_context_token_s, p70->per_context_token_s);
  EXPECT_GT(h200->default_capacity_tokens, p70->default_capacity_tokens);
  EXPECT_EQ(h200->kv_bytes_per_token, p70->kv_bytes_per_token);
}

}  // namespace
}  // namespace warmroute::engine
