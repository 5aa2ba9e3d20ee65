// Python's text rules, as the chat templates' reference renderer (Jinja2 on CPython) applies
// them: UTF-8 code points (Python strings index, slice and count code points), str.isspace,
// strip/split without arguments, str() and repr() of floats and strings.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace warmroute::jinja {

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF).
bool IsValidUtf8(std::string_view text);

// The code points of `text`, which must be valid UTF-8.
std::vector<char32_t> DecodeUtf8(std::string_view text);
void AppendUtf8(char32_t code_point, std::string& out);
std::string EncodeUtf8(const std::vector<char32_t>& code_points);

// The number of code points of valid UTF-8 `text` (Python's len()).
size_t CodePointCount(std::string_view text);

// Python's str.isspace() for one code point (Unicode White_Space with bidi class WS, B or S, as
// CPython defines it).
bool IsPythonSpace(char32_t c);

// str.strip(), str.lstrip(), str.rstrip() without arguments: Python whitespace.
std::string_view StripSpace(std::string_view text, bool left, bool right);
// The same with `chars` (each code point of `chars` is stripped).
std::string StripChars(std::string_view text, std::string_view chars, bool left, bool right);

// str.split() without a separator: runs of whitespace separate, empty pieces are dropped.
// At most `max_split` splits when >= 0.
std::vector<std::string> SplitSpace(std::string_view text, int64_t max_split);

// str.lower() / str.upper() for ASCII letters; other code points are kept as they are.
std::string AsciiLower(std::string_view text);
std::string AsciiUpper(std::string_view text);

// repr(float) / str(float): the shortest digits that read back as `value`, in fixed notation
// for exponents in [-4, 16) with at least one decimal ("1.0"), else "1e+16" style; "inf",
// "-inf", "nan".
std::string PythonFloatRepr(double value);

// repr(str): quoted with ' (or " when the text has ' and no "), with Python's escapes.
std::string PythonStringRepr(std::string_view text);

}  // namespace warmroute::jinja
