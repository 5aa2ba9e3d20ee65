// A tokenizer.json pattern: {"String": "..."} (a literal) or {"Regex": "..."} (an Oniguruma
// regex), as Split pre-tokenizers, Replace normalizers and Replace decoders hold them.
//
// Usage:
//   absl::StatusOr<Pattern> p = Pattern::FromJson(element, "pre_tokenizer.pattern");
//   std::vector<Match> matches;
//   p->FindAll(text, &matches);
//
// Thread-safety: FindAll is const and thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tokenize/regex.h"
#include "simdjson.h"

namespace warmroute::tokenize {

class Pattern {
 public:
  // InvalidArgument naming `where` when `json` is not {"String": s} or {"Regex": r} with a
  // non-empty s or a compiling r.
  static absl::StatusOr<Pattern> FromJson(simdjson::dom::element json, std::string_view where);
  // The same for the member "pattern" of `json`.
  static absl::StatusOr<Pattern> FromMember(simdjson::dom::object json, std::string_view where);
  static Pattern Literal(std::string literal);
  static absl::StatusOr<Pattern> FromRegex(std::string_view regex);

  // Non-overlapping matches in `text`, leftmost first (Regex::FindAll's rules; a literal's
  // occurrences are found left to right).
  void FindAll(std::string_view text, std::vector<Match>* matches) const;

  bool is_literal() const { return regex_ == nullptr; }
  // The literal (is_literal()) or the regex source.
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::shared_ptr<const Regex> regex_;  // null for a literal
};

}  // namespace warmroute::tokenize
