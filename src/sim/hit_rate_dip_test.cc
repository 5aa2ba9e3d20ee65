#include "sim/hit_rate_dip.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace warmroute::sim {
namespace {

// A series of 10 s windows from t = 0, each of 1,000 prompt tokens with the given hit rates in
// percent (a negative rate: a window without requests).
HitRateSeries Series(const std::vector<int>& percent) {
  HitRateSeries s;
  s.window_s = 10;
  for (int p : percent) {
    s.requests.push_back(p < 0 ? 0 : 10);
    s.prompt_tokens.push_back(p < 0 ? 0 : 1000);
    s.cached_tokens.push_back(p < 0 ? 0 : 10 * p);
  }
  return s;
}

DipOptions Options() { return {.baseline_s = 30, .tolerance_pp = 2, .hold_windows = 2}; }

TEST(HitRateDipTest, FirstMinuteIsTheHitRateOverTheWindowsOfTheSpanAfterTheChange) {
  const HitRateSeries s = Series({10, 50, 80, 82, 81, 60, 70, 80, 77, 80, 81, 80});
  DipOptions options = Options();
  options.after_s = 30;  // windows 5, 6, 7: 60, 70, 80
  const DipFigures f = AnalyseDip(s, 50, options);
  EXPECT_NEAR(f.first_minute, 0.70, 1e-12);
  EXPECT_NEAR(f.first_minute_drop_pp, 11, 1e-9);
}

TEST(HitRateDipTest, MeasuresDipAndRecoveryOnAHandMadeSeries) {
  // Change at t = 50: windows 2..4 are the baseline (80, 82, 81 -> 81%); after it 60, 70, 80
  // (within 2 pp of 81), 77 (not), 80, 81, 80.
  const HitRateSeries s = Series({10, 50, 80, 82, 81, 60, 70, 80, 77, 80, 81, 80});
  const DipFigures f = AnalyseDip(s, 50, Options());
  EXPECT_DOUBLE_EQ(f.before, 0.81);
  EXPECT_DOUBLE_EQ(f.before_min, 0.80);
  EXPECT_EQ(f.windows_before, 3);
  EXPECT_DOUBLE_EQ(f.dip, 0.60);
  EXPECT_NEAR(f.dip_pp, 21, 1e-9);
  EXPECT_DOUBLE_EQ(f.dip_at_s, 0);
  // 80 alone does not count (77 follows); 80, 81 is the first pair in the band: window 9, t = 90.
  ASSERT_TRUE(f.recovery_s.has_value());
  EXPECT_DOUBLE_EQ(*f.recovery_s, 40);
  EXPECT_NEAR(f.after, (0.80 + 0.81 + 0.80) / 3, 1e-12);  // the last 30 s
  // Against 80.3%: 80 (window 7) and then 77 -> the pair from window 9 as well.
  ASSERT_TRUE(f.settle_s.has_value());
  EXPECT_DOUBLE_EQ(*f.settle_s, 40);
  EXPECT_EQ(f.windows_after, 7);
}

TEST(HitRateDipTest, NoDipBeyondTheBandRecoversAtOnce) {
  const DipFigures f = AnalyseDip(Series({80, 80, 80, 79, 81, 80}), 30, Options());
  ASSERT_TRUE(f.recovery_s.has_value());
  EXPECT_DOUBLE_EQ(*f.recovery_s, 0);
  EXPECT_NEAR(f.dip_pp, 1, 1e-9);
  EXPECT_DOUBLE_EQ(f.dip_at_s, 0);
}

TEST(HitRateDipTest, RunEndingInsideTheDipIsNotRecovered) {
  const DipFigures f = AnalyseDip(Series({80, 80, 80, 50, 60, 79, 70}), 30, Options());
  EXPECT_FALSE(f.recovery_s.has_value());
  // The new level is the last 30 s (60, 79, 70: 69.7%): 79 and 70 are within 2 pp of it or above.
  ASSERT_TRUE(f.settle_s.has_value());
  EXPECT_DOUBLE_EQ(*f.settle_s, 20);
  EXPECT_DOUBLE_EQ(f.dip, 0.5);
  EXPECT_DOUBLE_EQ(f.dip_at_s, 0);
}

TEST(HitRateDipTest, LowerNewSteadyStateSettlesWithoutRecovering) {
  // A removal that leaves the fleet too small: 90% before, 80% for good after a dip to 60%.
  const DipFigures f =
      AnalyseDip(Series({90, 90, 90, 60, 70, 80, 81, 79, 80, 80, 80}), 30, Options());
  EXPECT_FALSE(f.recovery_s.has_value());
  EXPECT_DOUBLE_EQ(f.after, 0.8);
  ASSERT_TRUE(f.settle_s.has_value());
  EXPECT_DOUBLE_EQ(*f.settle_s, 20);  // window 5 (80) and 6 (81)
}

TEST(HitRateDipTest, EmptyWindowsNeitherBreakNorCountTowardsRecovery) {
  // After the change at 30: 50, (empty), 80, (empty), 80 -> the pair 80, 80 spans the gap.
  const DipFigures f = AnalyseDip(Series({80, 80, 80, 50, -1, 80, -1, 80}), 30, Options());
  ASSERT_TRUE(f.recovery_s.has_value());
  EXPECT_DOUBLE_EQ(*f.recovery_s, 20);
  EXPECT_EQ(f.windows_after, 3);
}

TEST(HitRateDipTest, WindowsAreAlignedOnTheChangeThroughTheOrigin) {
  HitRateSeries s = Series({80, 80, 40, 80, 80});
  s.origin_s = 2.5;  // windows start at 2.5, 12.5, 22.5, ...
  const DipFigures f = AnalyseDip(s, 22.5, Options());
  EXPECT_EQ(f.windows_before, 2);
  EXPECT_DOUBLE_EQ(f.before, 0.8);
  EXPECT_DOUBLE_EQ(f.dip, 0.4);
  ASSERT_TRUE(f.recovery_s.has_value());
  EXPECT_DOUBLE_EQ(*f.recovery_s, 10);
}

TEST(HitRateDipTest, NothingToReadGivesNaNNotACrash) {
  const DipFigures none = AnalyseDip(HitRateSeries{}, 30, Options());
  EXPECT_TRUE(std::isnan(none.before));
  EXPECT_TRUE(std::isnan(none.dip));
  EXPECT_FALSE(none.recovery_s.has_value());
  // A change before any baseline window: a dip but no level to recover to.
  const DipFigures early = AnalyseDip(Series({50, 80, 80}), 0, Options());
  EXPECT_TRUE(std::isnan(early.before));
  EXPECT_DOUBLE_EQ(early.dip, 0.5);
  EXPECT_FALSE(early.recovery_s.has_value());
}

}  // namespace
}  // namespace warmroute::sim
