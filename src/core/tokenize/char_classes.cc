#include "core/tokenize/char_classes.h"

#include <oniguruma.h>

#include <cstring>
#include <map>
#include <string>

#include "core/tokenize/regex.h"

namespace warmroute::tokenize {
namespace {

constexpr size_t kCodePoints = 0x110000;

// Sets `bit` in `table` for every code point of Oniguruma's class `ctype`.
void MarkClass(OnigCtype ctype, uint8_t bit, std::vector<uint8_t>& table) {
  OnigEncoding enc = ONIG_ENCODING_UTF8;
  OnigCodePoint sb_out = 0;
  const OnigCodePoint* ranges = nullptr;
  if (ONIGENC_GET_CTYPE_CODE_RANGE(enc, ctype, &sb_out, &ranges) == 0 && ranges != nullptr) {
    const OnigCodePoint n = ranges[0];
    for (OnigCodePoint k = 0; k < n; ++k) {
      const OnigCodePoint lo = ranges[1 + 2 * k], hi = ranges[2 + 2 * k];
      for (OnigCodePoint cp = lo; cp <= hi && cp < kCodePoints; ++cp) table[cp] |= bit;
    }
    return;
  }
  // No range table for this class: ask code point by code point.
  for (OnigCodePoint cp = 0; cp < kCodePoints; ++cp) {
    if (ONIGENC_IS_CODE_CTYPE(enc, cp, ctype)) table[cp] |= bit;
  }
}

OnigCtype PropertyCtype(const char* name) {
  std::string s(name);
  auto* p = reinterpret_cast<OnigUChar*>(s.data());
  return static_cast<OnigCtype>(
      ONIGENC_PROPERTY_NAME_TO_CTYPE(ONIG_ENCODING_UTF8, p, p + s.size()));
}

}  // namespace

const CharClasses& CharClasses::Get() {
  static const CharClasses* const classes = new CharClasses();
  return *classes;
}

CharClasses::CharClasses() {
  InitializeOniguruma();
  std::vector<uint8_t> table(kCodePoints, 0);
  MarkClass(PropertyCtype("L"), kLetter, table);
  MarkClass(PropertyCtype("N"), kNumber, table);
  MarkClass(PropertyCtype("M"), kMark, table);
  MarkClass(PropertyCtype("P"), kPunct, table);
  MarkClass(PropertyCtype("S"), kSymbol, table);
  MarkClass(ONIGENC_CTYPE_SPACE, kSpace, table);
  MarkClass(ONIGENC_CTYPE_WORD, kWord, table);
  std::memcpy(ascii_, table.data(), sizeof(ascii_));
  std::map<std::string, uint16_t> distinct;
  stage1_.resize(kCodePoints >> 8);
  for (size_t block = 0; block < stage1_.size(); ++block) {
    std::string bytes(reinterpret_cast<const char*>(table.data()) + (block << 8), 256);
    auto [it, inserted] = distinct.try_emplace(bytes, static_cast<uint16_t>(distinct.size()));
    if (inserted) blocks_.insert(blocks_.end(), bytes.begin(), bytes.end());
    stage1_[block] = it->second;
  }
}

}  // namespace warmroute::tokenize
