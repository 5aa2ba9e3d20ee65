#include "common/rng.h"

#include <gtest/gtest.h>

#include <cmath>

namespace warmroute {
namespace {

TEST(RngTest, SameSeedGivesSameSequence) {
  Rng a(7), b(7), c(8);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.Next();
    EXPECT_EQ(x, b.Next());
    differs |= x != c.Next();
  }
  EXPECT_TRUE(differs);
}

TEST(RngTest, DistributionsHaveTheirMeans) {
  Rng rng(1);
  double sum_u = 0, sum_e = 0, sum_n = 0, sum_n2 = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double u = rng.Uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum_u += u;
    sum_e += rng.Exponential(3.0);
    const double z = rng.Normal();
    sum_n += z;
    sum_n2 += z * z;
    ASSERT_LT(rng.UniformInt(10), 10u);
  }
  EXPECT_NEAR(sum_u / n, 0.5, 0.01);
  EXPECT_NEAR(sum_e / n, 3.0, 0.05);
  EXPECT_NEAR(sum_n / n, 0.0, 0.01);
  EXPECT_NEAR(sum_n2 / n, 1.0, 0.02);
}

}  // namespace
}  // namespace warmroute
