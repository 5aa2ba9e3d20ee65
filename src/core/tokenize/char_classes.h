// The Unicode character classes the tokenizer's hand-written pre-tokenizer matchers test
// (split_matchers.h) — \p{L}, \p{N}, \p{M}, \p{P}, \p{S}, \s and \w — taken from Oniguruma's own
// tables, so that a matcher agrees with the Oniguruma regex it stands for on every code point.
//
// Usage:
//   const CharClasses& classes = CharClasses::Get();
//   if (classes.Is(cp, CharClasses::kLetter)) ...
//
// Thread-safety: Get() builds the table once (thread-safe); lookups are const.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace warmroute::tokenize {

class CharClasses {
 public:
  enum Bit : uint8_t {
    kLetter = 1 << 0,  // \p{L}
    kNumber = 1 << 1,  // \p{N} (also Rust's char::is_numeric)
    kMark = 1 << 2,    // \p{M}
    kPunct = 1 << 3,   // \p{P}
    kSymbol = 1 << 4,  // \p{S}
    kSpace = 1 << 5,   // \s
    kWord = 1 << 6,    // \w
  };

  static const CharClasses& Get();

  // The class bits of code point `cp` (0 past U+10FFFF).
  uint8_t Of(char32_t cp) const {
    if (cp < 0x80) return ascii_[cp];
    if (cp > 0x10FFFF) return 0;
    return blocks_[(static_cast<size_t>(stage1_[cp >> 8]) << 8) | (cp & 0xFF)];
  }
  bool Is(char32_t cp, uint8_t bits) const { return (Of(cp) & bits) != 0; }

  // Bytes held by the tables.
  size_t MemoryBytes() const { return stage1_.size() * 2 + blocks_.size() + sizeof(ascii_); }

 private:
  CharClasses();

  uint8_t ascii_[128];
  std::vector<uint16_t> stage1_;  // code point >> 8 -> block number
  std::vector<uint8_t> blocks_;   // 256 entries per distinct block
};

}  // namespace warmroute::tokenize
