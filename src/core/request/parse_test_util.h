// Test helpers for the request parsers' tests. For tests only.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/status.h"
#include "core/request/inference_request.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::request::testing {

// Expects an InvalidArgument naming `param`, whose message contains `message_part`.
inline void ExpectInvalid(const absl::StatusOr<InferenceRequest>& result, std::string_view param,
                          std::string_view message_part = "") {
  ASSERT_FALSE(result.ok()) << "expected an error for param " << param;
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParamOf(result.status()), std::optional<std::string>(std::string(param)))
      << result.status();
  EXPECT_THAT(std::string(result.status().message()),
              ::testing::HasSubstr(std::string(message_part)));
}

}  // namespace warmroute::request::testing
