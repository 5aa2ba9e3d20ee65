#include "core/request/collapse_whitespace.h"

#include <string>

#include "gtest/gtest.h"

namespace warmroute::request {
namespace {

TEST(CollapseWhitespaceTest, CollapsesRunsTrailingSpaceAndBlankLines) {
  EXPECT_EQ(CollapseWhitespace("Hello   world\t\tnow  \nnext line \t\r\n\n\n\n  \nlast\n\n  "),
            "Hello world now\nnext line\n\nlast");
  EXPECT_EQ(CollapseWhitespace("a\n\nb"), "a\n\nb");
  EXPECT_EQ(CollapseWhitespace("   \n\t"), "");
}

TEST(CollapseWhitespaceTest, KeepsIndentation) {
  EXPECT_EQ(CollapseWhitespace("def f():\n    return  1   \n\t- item"),
            "def f():\n    return 1\n\t- item");
}

TEST(CollapseWhitespaceTest, LeavesCleanTextAsItIs) {
  const std::string clean = "You are a helpful assistant.\n\nBe brief.";
  EXPECT_EQ(CollapseWhitespace(clean), clean);
}

}  // namespace
}  // namespace warmroute::request
