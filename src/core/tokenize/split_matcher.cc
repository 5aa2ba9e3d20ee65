#include "core/tokenize/split_matcher.h"

#include "core/tokenize/char_classes.h"
#include "core/tokenize/utf8.h"

namespace warmroute::tokenize {
namespace {

using C = CharClasses;

// Character access over a text: the code point at a byte offset and its classes.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text), classes_(CharClasses::Get()) {}

  size_t size() const { return text_.size(); }
  bool IsApostrophe(size_t at) const { return text_[at] == '\''; }
  // The code point at `at` (REQUIRES: at < size()) and, in *next, the offset after it.
  char32_t At(size_t at, size_t* next) const {
    const auto b = static_cast<unsigned char>(text_[at]);
    if (b < 0x80) {
      *next = at + 1;
      return b;
    }
    *next = at;
    return DecodeUtf8(text_, next);
  }
  uint8_t ClassOf(char32_t cp) const { return classes_.Of(cp); }
  // The end of the run of characters from `at` whose classes intersect `bits`.
  size_t RunEnd(size_t at, uint8_t bits) const {
    while (at < size()) {
      size_t next;
      if (!classes_.Is(At(at, &next), bits)) break;
      at = next;
    }
    return at;
  }
  // The end of the run of characters from `at` whose classes miss `bits`.
  size_t RunEndOutside(size_t at, uint8_t bits) const {
    while (at < size()) {
      size_t next;
      if (classes_.Is(At(at, &next), bits)) break;
      at = next;
    }
    return at;
  }
  // The end of the run of "\r" and "\n" from `at`.
  size_t NewlineRunEnd(size_t at) const {
    while (at < size() && (text_[at] == '\r' || text_[at] == '\n')) ++at;
    return at;
  }

 private:
  std::string_view text_;
  const CharClasses& classes_;
};

bool IsNewline(char32_t c) { return c == '\r' || c == '\n'; }

// \s, \p{L} and \p{N}: what [^\s\p{L}\p{N}] leaves out.
constexpr uint8_t kSpaceLetterNumber = C::kSpace | C::kLetter | C::kNumber;

// The matches of a pattern that matches at every character: successive MatchAt(text, s) from 0.
template <typename MatchAtFn>
void FindGapless(std::string_view text, std::vector<Match>* matches, MatchAtFn match_at) {
  matches->clear();
  const Cursor t(text);
  size_t s = 0;
  while (s < t.size()) {
    const size_t e = match_at(t, s);
    matches->push_back({static_cast<uint32_t>(s), static_cast<uint32_t>(e)});
    s = e;
  }
}

// The end of a match of \s*[\r\n]+|\s+(?!\S)|\s+ at `s` (a \s character), which always matches:
// up to the last newline of the run of spaces, else the whole run when it ends the text or is one
// character long, else the run but its last character.
size_t MatchSpaces(const Cursor& t, size_t s) {
  size_t end = s, last_newline_end = 0, last_start = s;
  bool newline = false;
  while (end < t.size()) {
    size_t next;
    const char32_t c = t.At(end, &next);
    if (!(t.ClassOf(c) & C::kSpace)) break;
    if (IsNewline(c)) {
      newline = true;
      last_newline_end = next;
    }
    last_start = end;
    end = next;
  }
  if (newline) return last_newline_end;
  if (end == t.size() || last_start == s) return end;
  return last_start;
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d) (case_insensitive) or the same without (?i:), at `s`; 0 when no
// match.
size_t MatchContraction(const Cursor& t, size_t s, bool case_insensitive) {
  size_t i;
  if (t.At(s, &i) != '\'' || i >= t.size()) return 0;  // (callers test for "'" first)
  const auto is = [&](char32_t c, char lower) {
    if (c == static_cast<char32_t>(lower)) return true;
    if (!case_insensitive) return false;
    if (c == static_cast<char32_t>(lower - 32)) return true;
    return lower == 's' && c == 0x17F;  // LATIN SMALL LETTER LONG S folds to 's'
  };
  size_t j;
  const char32_t c1 = t.At(i, &j);
  if (is(c1, 's') || is(c1, 't') || is(c1, 'm') || is(c1, 'd')) return j;
  if (j >= t.size()) return 0;
  size_t k;
  const char32_t c2 = t.At(j, &k);
  if ((is(c1, 'r') && is(c2, 'e')) || (is(c1, 'v') && is(c2, 'e')) ||
      (is(c1, 'l') && is(c2, 'l'))) {
    return k;
  }
  return 0;
}

// The GPT-4 family, with at most `max_digits` digits per number. Every character starts a match.
class Gpt4Matcher final : public SplitMatcher {
 public:
  explicit Gpt4Matcher(int max_digits) : max_digits_(max_digits) {}

  void FindAll(std::string_view text, std::vector<Match>* matches) const override {
    FindGapless(text, matches, [this](const Cursor& t, size_t s) { return MatchAt(t, s); });
  }

  CutKind CutAfterNewline(char) const override { return CutKind::kHard; }

 private:
  size_t MatchAt(const Cursor& t, size_t s) const {
    if (t.IsApostrophe(s)) {
      if (const size_t e = MatchContraction(t, s, true); e != 0) return e;
    }
    size_t i1;
    const char32_t c0 = t.At(s, &i1);
    const uint8_t k0 = t.ClassOf(c0);
    uint8_t k1 = 0;
    size_t i2 = i1;
    if (i1 < t.size()) k1 = t.ClassOf(t.At(i1, &i2));
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (k0 & C::kLetter) return t.RunEnd(i1, C::kLetter);
    if (!IsNewline(c0) && !(k0 & C::kNumber) && (k1 & C::kLetter)) {
      return t.RunEnd(i2, C::kLetter);
    }
    // \p{N}{1,max}
    if (k0 & C::kNumber) {
      size_t e = i1;
      for (int n = 1; n < max_digits_ && e < t.size(); ++n) {
        size_t next;
        if (!(t.ClassOf(t.At(e, &next)) & C::kNumber)) break;
        e = next;
      }
      return e;
    }
    //  ?[^\s\p{L}\p{N}]+[\r\n]*
    const auto other = [](uint8_t k) { return !(k & kSpaceLetterNumber); };
    if (other(k0)) return t.NewlineRunEnd(t.RunEndOutside(i1, kSpaceLetterNumber));
    if (c0 == ' ' && i1 < t.size() && other(k1))
      return t.NewlineRunEnd(t.RunEndOutside(i2, kSpaceLetterNumber));
    return MatchSpaces(t, s);  // c0 is a \s character
  }

  int max_digits_;
};

// GPT-2's regex. Every character starts a match.
class Gpt2Matcher final : public SplitMatcher {
 public:
  void FindAll(std::string_view text, std::vector<Match>* matches) const override {
    FindGapless(text, matches, &MatchAt);
  }

  CutKind CutAfterNewline(char) const override { return CutKind::kHard; }

 private:
  static size_t MatchAt(const Cursor& t, size_t s) {
    if (t.IsApostrophe(s)) {
      if (const size_t e = MatchContraction(t, s, false); e != 0) return e;
    }
    size_t i1;
    const char32_t c0 = t.At(s, &i1);
    const uint8_t k0 = t.ClassOf(c0);
    uint8_t k1 = 0;
    size_t i2 = i1;
    if (i1 < t.size()) k1 = t.ClassOf(t.At(i1, &i2));
    const bool space = c0 == ' ' && i1 < t.size();
    //  ?\p{L}+ and  ?\p{N}+
    for (const uint8_t bit : {C::kLetter, C::kNumber}) {
      if (k0 & bit) return t.RunEnd(i1, bit);
      if (space && (k1 & bit)) return t.RunEnd(i2, bit);
    }
    //  ?[^\s\p{L}\p{N}]+
    if (!(k0 & kSpaceLetterNumber)) return t.RunEndOutside(i1, kSpaceLetterNumber);
    if (space && !(k1 & kSpaceLetterNumber)) return t.RunEndOutside(i2, kSpaceLetterNumber);
    // \s+(?!\S)|\s+
    size_t end = s, last_start = s;
    while (end < t.size()) {
      size_t next;
      if (!(t.ClassOf(t.At(end, &next)) & C::kSpace)) break;
      last_start = end;
      end = next;
    }
    if (end == t.size() || last_start == s) return end;
    return last_start;
  }
};

// DeepSeek V3's third Split. Not every character starts a match (digits, controls and others
// are left between matches).
class DeepSeekMatcher final : public SplitMatcher {
 public:
  void FindAll(std::string_view text, std::vector<Match>* matches) const override {
    matches->clear();
    const Cursor t(text);
    size_t s = 0;
    while (s < t.size()) {
      const size_t e = MatchAt(t, s);
      if (e == 0) {
        t.At(s, &s);
        continue;
      }
      matches->push_back({static_cast<uint32_t>(s), static_cast<uint32_t>(e)});
      s = e;
    }
  }

  CutKind CutAfterNewline(char) const override { return CutKind::kHard; }

 private:
  static bool AsciiPunct(char32_t c) {
    return c < 0x80 && ((c >= '!' && c <= '/') || (c >= ':' && c <= '@') ||
                        (c >= '[' && c <= '`') || (c >= '{' && c <= '~'));
  }
  static bool AsciiLetter(char32_t c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }

  // The end of the match at `s`, or 0 when none starts there.
  static size_t MatchAt(const Cursor& t, size_t s) {
    size_t i1;
    const char32_t c0 = t.At(s, &i1);
    const uint8_t k0 = t.ClassOf(c0);
    char32_t c1 = 0;
    uint8_t k1 = 0;
    size_t i2 = i1;
    if (i1 < t.size()) {
      c1 = t.At(i1, &i2);
      k1 = t.ClassOf(c1);
    }
    // [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
    if (AsciiPunct(c0) && i1 < t.size() && AsciiLetter(c1)) return AsciiLetterRunEnd(t, i2);
    // [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
    constexpr uint8_t kLM = C::kLetter | C::kMark;
    if (!IsNewline(c0) && !(k0 & (C::kLetter | C::kPunct | C::kSymbol)) && i1 < t.size() &&
        (k1 & kLM)) {
      return t.RunEnd(i2, kLM);
    }
    if (k0 & kLM) return t.RunEnd(i1, kLM);
    //  ?[\p{P}\p{S}]+[\r\n]*
    constexpr uint8_t kPS = C::kPunct | C::kSymbol;
    if (k0 & kPS) return t.NewlineRunEnd(t.RunEnd(i1, kPS));
    if (c0 == ' ' && i1 < t.size() && (k1 & kPS)) return t.NewlineRunEnd(t.RunEnd(i2, kPS));
    if (k0 & C::kSpace) return MatchSpaces(t, s);
    return 0;
  }

  static size_t AsciiLetterRunEnd(const Cursor& t, size_t at) {
    while (at < t.size()) {
      size_t next;
      if (!AsciiLetter(t.At(at, &next))) break;
      at = next;
    }
    return at;
  }
};

// Runs of one kind of character, at most `max_run` characters each (0: no limit):
// \p{N}{1,3}, \p{N}, and DeepSeek V3's [\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+.
class RunMatcher final : public SplitMatcher {
 public:
  using Predicate = bool (*)(char32_t);
  RunMatcher(Predicate in, int max_run) : in_(in), max_run_(max_run) {}

  void FindAll(std::string_view text, std::vector<Match>* matches) const override {
    matches->clear();
    const Cursor t(text);
    size_t s = 0;
    while (s < t.size()) {
      size_t e;
      if (!in_(t.At(s, &e))) {
        s = e;
        continue;
      }
      for (int n = 1; (max_run_ == 0 || n < max_run_) && e < t.size(); ++n) {
        size_t after;
        if (!in_(t.At(e, &after))) break;
        e = after;
      }
      matches->push_back({static_cast<uint32_t>(s), static_cast<uint32_t>(e)});
      s = e;
    }
  }

  // "\n" is in neither class; a run starts at a cut before a character of it.
  CutKind CutAfterNewline(char after) const override {
    return in_(static_cast<unsigned char>(after)) ? CutKind::kHard : CutKind::kNeutral;
  }

 private:
  Predicate in_;
  int max_run_;
};

bool IsNumber(char32_t c) { return CharClasses::Get().Is(c, C::kNumber); }
bool IsKanaOrCjk(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FA5) || (c >= 0x3040 && c <= 0x309F) ||
         (c >= 0x30A0 && c <= 0x30FF);
}

}  // namespace

std::shared_ptr<const SplitMatcher> SplitMatcher::ForRegex(std::string_view regex) {
  static constexpr std::string_view kGpt4Head =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|)";
  static constexpr std::string_view kGpt4Tail =
      R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  if (regex.starts_with(kGpt4Head) && regex.ends_with(kGpt4Tail) &&
      regex.size() > kGpt4Head.size() + kGpt4Tail.size()) {
    const std::string_view digits =
        regex.substr(kGpt4Head.size(), regex.size() - kGpt4Head.size() - kGpt4Tail.size());
    if (digits == R"(\p{N}{1,3})") return std::make_shared<Gpt4Matcher>(3);
    if (digits == R"(\p{N})") return std::make_shared<Gpt4Matcher>(1);
    return nullptr;
  }
  if (regex == R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)") {
    return std::make_shared<Gpt2Matcher>();
  }
  if (regex ==
      "[!\"#$%&'()*+,\\-./"
      ":;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}"
      "]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+") {
    return std::make_shared<DeepSeekMatcher>();
  }
  if (regex == R"(\p{N}{1,3})") return std::make_shared<RunMatcher>(&IsNumber, 3);
  if (regex == R"(\p{N})") return std::make_shared<RunMatcher>(&IsNumber, 1);
  if (regex == "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+") {
    return std::make_shared<RunMatcher>(&IsKanaOrCjk, 0);
  }
  return nullptr;
}

}  // namespace warmroute::tokenize
