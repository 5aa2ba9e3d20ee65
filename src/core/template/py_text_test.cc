#include "core/template/py_text.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::jinja {
namespace {

TEST(PyTextTest, FloatReprIsPythons) {
  EXPECT_EQ(PythonFloatRepr(1.0), "1.0");
  EXPECT_EQ(PythonFloatRepr(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(PythonFloatRepr(1e16), "1e+16");
  EXPECT_EQ(PythonFloatRepr(123456789012345.0), "123456789012345.0");
  EXPECT_EQ(PythonFloatRepr(1e-5), "1e-05");
  EXPECT_EQ(PythonFloatRepr(0.0001), "0.0001");
  EXPECT_EQ(PythonFloatRepr(-2.5e300), "-2.5e+300");
  EXPECT_EQ(PythonFloatRepr(-0.0), "-0.0");
  EXPECT_EQ(PythonFloatRepr(1.0 / 0.0), "inf");
}

TEST(PyTextTest, StringReprQuotesAndEscapesAsPython) {
  EXPECT_EQ(PythonStringRepr("it's"), "\"it's\"");
  EXPECT_EQ(PythonStringRepr("a'b\"c"), "'a\\'b\"c'");
  EXPECT_EQ(PythonStringRepr("\n\t\x01\\"), "'\\n\\t\\x01\\\\'");
  EXPECT_EQ(PythonStringRepr("東京 é"), "'東京 é'");
  EXPECT_EQ(PythonStringRepr("\u00a0\u200b"), "'\\xa0\\u200b'");
}

TEST(PyTextTest, WhitespaceIsPythonsUnicodeWhitespace) {
  EXPECT_EQ(StripSpace("\u3000\u00a0 x \t\n\u2003", true, true), "x");
  EXPECT_EQ(StripSpace("  x  ", true, false), "x  ");
  EXPECT_EQ(StripSpace("  x  ", false, true), "  x");
  EXPECT_THAT(SplitSpace(" a\u3000b  c ", -1), ::testing::ElementsAre("a", "b", "c"));
  EXPECT_THAT(SplitSpace(" a b  c ", 1), ::testing::ElementsAre("a", "b  c"));
  EXPECT_EQ(StripChars("xyaxy", "yx", true, true), "a");
  EXPECT_FALSE(IsPythonSpace(0x200B));  // zero width space is not whitespace
}

TEST(PyTextTest, CountsCodePointsAndChecksUtf8) {
  EXPECT_EQ(CodePointCount("héllo👍"), 6u);
  EXPECT_TRUE(IsValidUtf8("héllo👍"));
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));      // overlong
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));  // a surrogate
  EXPECT_FALSE(IsValidUtf8("\xe6\x9d"));      // truncated
  EXPECT_EQ(EncodeUtf8(DecodeUtf8("a東👍")), "a東👍");
}

}  // namespace
}  // namespace warmroute::jinja
