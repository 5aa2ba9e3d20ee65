#include "router/engine_answer.h"

#include "gtest/gtest.h"

namespace warmroute::router {
namespace {

TEST(JudgeStatusTest, RelaysSuccessesAndClientErrors) {
  for (int status : {200, 201, 204, 301, 304, 400, 404, 422, 429, 499}) {
    EXPECT_EQ(JudgeStatus(status), HeadVerdict::kRelay) << status;
  }
}

TEST(JudgeStatusTest, ServerErrorsAreFailedDispatches) {
  for (int status : {500, 502, 503, 504, 599}) {
    EXPECT_EQ(JudgeStatus(status), HeadVerdict::kFailed) << status;
  }
}

TEST(JudgeStatusTest, SwitchingProtocolsAndStatusesPast599AreInvalid) {
  for (int status : {101, 600, 700, 999}) {
    EXPECT_EQ(JudgeStatus(status), HeadVerdict::kInvalid) << status;
  }
}

TEST(InvalidStatusMessageTest, NamesTheBackendAndTheStatus) {
  EXPECT_EQ(InvalidStatusMessage("r0", 999),
            "backend r0 answered with the invalid HTTP status 999");
  EXPECT_EQ(InvalidStatusMessage("r1", 101),
            "backend r1 answered 101 Switching Protocols to a request that asked for no upgrade");
}

}  // namespace
}  // namespace warmroute::router
