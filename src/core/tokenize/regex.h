// An Oniguruma regex, as the Rust `tokenizers` library compiles and iterates one: the pattern of
// a tokenizer.json Split pre-tokenizer or Replace normalizer, Ruby syntax (ONIG_SYNTAX_DEFAULT),
// UTF-8.
//
// Usage:
//   absl::StatusOr<std::unique_ptr<Regex>> re = Regex::Compile("\\p{L}+");
//   std::vector<Match> matches;
//   (*re)->FindAll("ab cd", &matches);   // {0, 2}, {3, 5}
//
// Thread-safety: Compile is thread-safe; FindAll is const and may run on many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

struct re_pattern_buffer;

namespace warmroute::tokenize {

// Initialises Oniguruma for UTF-8 (once per process; later calls do nothing).
void InitializeOniguruma();

// A match: byte offsets [begin, end) in the searched text.
struct Match {
  uint32_t begin = 0;
  uint32_t end = 0;
  bool operator==(const Match&) const = default;
};

class Regex {
 public:
  // InvalidArgument (with Oniguruma's message) when `pattern` does not compile.
  static absl::StatusOr<std::unique_ptr<Regex>> Compile(std::string_view pattern);

  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  ~Regex();

  // Replaces `matches` with the successive non-overlapping matches in `text`, leftmost first,
  // as the Rust onig crate's find_iter gives them: a search restarts where the last match ended,
  // and an empty match right where the previous match ended is skipped (the search moves on
  // one character). REQUIRES: `text` is well-formed UTF-8.
  void FindAll(std::string_view text, std::vector<Match>* matches) const;

  // True when the pattern matches somewhere in `text`. Oniguruma backtracks on a heap stack,
  // not the thread's (std::regex recursed per character and overflowed the stack on a 100 KB
  // line), and gives up after its retry limit (ONIG_DEFAULT_RETRY_LIMIT_IN_MATCH, 10 million
  // steps): a pathological pattern and text is then "no match", in bounded time. Text that is
  // not well-formed UTF-8 is no match.
  bool Search(std::string_view text) const;

  const std::string& pattern() const { return pattern_; }

 private:
  Regex(std::string pattern, re_pattern_buffer* regex)
      : pattern_(std::move(pattern)), regex_(regex) {}

  std::string pattern_;
  re_pattern_buffer* regex_;
};

}  // namespace warmroute::tokenize
