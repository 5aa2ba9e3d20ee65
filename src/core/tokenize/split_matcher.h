// Hand-written matchers for the Split regexes that real tokenizer.json files use, each equal to
// Oniguruma running that exact pattern (split_matcher_test.cc compares them on random text) and
// several times faster: they test each character's class in one table lookup (char_classes.h)
// instead of backtracking through the alternatives.
//
//   GPT-4 family     (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//                    ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+   (Llama 3; Qwen 2/3 with
//                    \p{N} for \p{N}{1,3})
//   GPT-2            's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//                    (ByteLevel's own regex)
//   DeepSeek V3      its third Split: [!"#...~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|
//                    ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   digit groups     \p{N}{1,3} and \p{N}
//   kana and CJK     [\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+ (DeepSeek V3's second Split)
//
// Each also states where a text may be cut (pre_tokenizer.h): the first three split after
// every "\n" that a non-space follows, whatever follows it (no alternative matches a "\n"
// followed by a non-space, and each match's end depends only on the character after it), so
// they are kHard there; digit groups are kHard before a digit and kNeutral before anything else;
// the CJK runs are kNeutral before ASCII.
//
// Thread-safety: const methods are thread-safe.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "core/tokenize/pre_tokenizer.h"
#include "core/tokenize/regex.h"

namespace warmroute::tokenize {

class SplitMatcher {
 public:
  virtual ~SplitMatcher() = default;

  // The matcher equal to `regex`, or null when there is none (Oniguruma runs it).
  static std::shared_ptr<const SplitMatcher> ForRegex(std::string_view regex);

  // The matches Regex::FindAll would give for the pattern. REQUIRES: well-formed UTF-8.
  virtual void FindAll(std::string_view text, std::vector<Match>* matches) const = 0;

  // Whether a text may be cut after "\n" before `after`, an ASCII character other than a space
  // or a control (0x21 to 0x7E).
  virtual CutKind CutAfterNewline(char after) const = 0;
};

}  // namespace warmroute::tokenize
