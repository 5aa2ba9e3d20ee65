#include "net/http1/sse.h"

#include <gtest/gtest.h>

namespace warmroute::net {
namespace {

TEST(SseTest, FindsTheEndOfEachCompleteEventWithLfOrCrlf) {
  constexpr std::string_view text = "data: a\n\ndata: b\r\n\r\ndata: c\n";
  EXPECT_EQ(SseEventEnd(text, 0), 9u);
  EXPECT_EQ(SseEventEnd(text, 9), 20u);
  EXPECT_EQ(SseEventEnd(text, 20), std::string_view::npos);  // incomplete: no blank line yet
  EXPECT_EQ(SseEventEnd("", 0), std::string_view::npos);
}

}  // namespace
}  // namespace warmroute::net
