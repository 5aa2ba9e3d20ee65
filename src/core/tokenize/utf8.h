// UTF-8 helpers of the tokenizer: decoding code points, appending them, checking and repairing
// ill-formed input.
//
// Thread-safety: stateless functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace warmroute::tokenize {

// The length of the UTF-8 sequence that starts with `lead`: 1 to 4 (1 for a byte that cannot
// start a sequence).
inline int Utf8SequenceLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xF0) return 4;
  if (lead >= 0xE0) return 3;
  if (lead >= 0xC0) return 2;
  return 1;
}

// The code point at `s[*i]`, advancing *i past it. REQUIRES: `s` is well-formed UTF-8 and
// *i < s.size() is the start of a code point.
inline char32_t DecodeUtf8(std::string_view s, size_t* i) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + *i;
  const unsigned char b0 = p[0];
  if (b0 < 0x80) {
    *i += 1;
    return b0;
  }
  if (b0 < 0xE0) {
    *i += 2;
    return (char32_t{b0 & 0x1Fu} << 6) | (p[1] & 0x3Fu);
  }
  if (b0 < 0xF0) {
    *i += 3;
    return (char32_t{b0 & 0x0Fu} << 12) | (char32_t{p[1] & 0x3Fu} << 6) | (p[2] & 0x3Fu);
  }
  *i += 4;
  return (char32_t{b0 & 0x07u} << 18) | (char32_t{p[1] & 0x3Fu} << 12) |
         (char32_t{p[2] & 0x3Fu} << 6) | (p[3] & 0x3Fu);
}

// The code point that ends at s[end] (exclusive). REQUIRES: well-formed UTF-8, end > 0.
char32_t DecodeUtf8Before(std::string_view s, size_t end);

// Appends the UTF-8 encoding of `cp` (REQUIRES: a Unicode scalar value).
void AppendUtf8(char32_t cp, std::string* out);

// True when `s` is well-formed UTF-8 (no overlong forms, surrogates or values past U+10FFFF).
bool IsWellFormedUtf8(std::string_view s);

// `s` with every maximal ill-formed subsequence replaced by U+FFFD, as Rust's
// String::from_utf8_lossy does.
std::string RepairUtf8(std::string_view s);

}  // namespace warmroute::tokenize
