#include "core/stats/samples.h"

#include <vector>

#include "gtest/gtest.h"

namespace warmroute::stats {
namespace {

TEST(PercentileOfSortedTest, InterpolatesBetweenClosestRanks) {
  const std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(PercentileOfSorted(v, 0), 1);
  EXPECT_DOUBLE_EQ(PercentileOfSorted(v, 1), 4);
  EXPECT_DOUBLE_EQ(PercentileOfSorted(v, 0.5), 2.5);  // NumPy: median of 1..4
  EXPECT_DOUBLE_EQ(PercentileOfSorted(v, 0.9), 3.7);  // h = 2.7
}

TEST(PercentileOfSortedTest, EmptyIsZeroAndSingleIsItself) {
  EXPECT_EQ(PercentileOfSorted({}, 0.5), 0);
  const std::vector<double> one = {7};
  EXPECT_EQ(PercentileOfSorted(one, 0.99), 7);
}

TEST(PercentileOfSortedTest, ClampsQuantile) {
  const std::vector<double> v = {1, 2};
  EXPECT_EQ(PercentileOfSorted(v, -1), 1);
  EXPECT_EQ(PercentileOfSorted(v, 2), 2);
}

TEST(SamplesTest, SortsUnorderedInputBeforeTakingPercentiles) {
  Samples s;
  for (double x : {5.0, 1.0, 4.0, 2.0, 3.0}) s.Add(x);
  EXPECT_EQ(s.size(), 5u);
  EXPECT_DOUBLE_EQ(s.Percentile(0.5), 3);
  EXPECT_DOUBLE_EQ(s.Mean(), 3);
  EXPECT_DOUBLE_EQ(s.Sum(), 15);
  EXPECT_EQ(s.Min(), 1);
  EXPECT_EQ(s.Max(), 5);
  s.Add(0);  // adding after a sort re-sorts on the next query
  EXPECT_EQ(s.Min(), 0);
  EXPECT_DOUBLE_EQ(s.Percentile(0.5), 2.5);
}

TEST(MaxOverMeanTest, IsOneWhenEvenAndGrowsWithSkew) {
  const std::vector<double> even = {2, 2, 2, 2};
  const std::vector<double> skew = {8, 0, 0, 0};
  EXPECT_DOUBLE_EQ(MaxOverMean(even), 1);
  EXPECT_DOUBLE_EQ(MaxOverMean(skew), 4);
  EXPECT_EQ(MaxOverMean({}), 0);
  const std::vector<double> zeros = {0, 0};
  EXPECT_EQ(MaxOverMean(zeros), 0);
}

}  // namespace
}  // namespace warmroute::stats
