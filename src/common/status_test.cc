#include "common/status.h"

#include <gtest/gtest.h>

namespace warmroute {
namespace {

absl::StatusOr<int> Half(int x) {
  if (x % 2) return InvalidParam("x", "x must be even");
  return x / 2;
}

absl::StatusOr<int> Quarter(int x) {
  WR_ASSIGN_OR_RETURN(int h, Half(x));
  WR_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(StatusTest, InvalidParamCarriesTheParameterThroughMacros) {
  EXPECT_EQ(*Quarter(8), 2);
  absl::StatusOr<int> bad = Quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParamOf(bad.status()), "x");
  EXPECT_EQ(ParamOf(absl::InternalError("no param")), std::nullopt);
}

}  // namespace
}  // namespace warmroute
