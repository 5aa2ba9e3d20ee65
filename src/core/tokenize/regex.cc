#include "core/tokenize/regex.h"

#include <oniguruma.h>

#include <mutex>

#include "absl/strings/str_cat.h"
#include "core/tokenize/json_fields.h"
#include "core/tokenize/utf8.h"

namespace warmroute::tokenize {

void InitializeOniguruma() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
}

absl::StatusOr<std::unique_ptr<Regex>> Regex::Compile(std::string_view pattern) {
  InitializeOniguruma();
  if (!IsWellFormedUtf8(pattern)) return absl::InvalidArgumentError("regex is not valid UTF-8");
  regex_t* regex = nullptr;
  OnigErrorInfo info{};
  const auto* p = reinterpret_cast<const OnigUChar*>(pattern.data());
  const int rc = onig_new(&regex, p, p + pattern.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
                          ONIG_SYNTAX_DEFAULT, &info);
  if (rc != ONIG_NORMAL) {
    OnigUChar message[ONIG_MAX_ERROR_MESSAGE_LEN];
    onig_error_code_to_str(message, rc, &info);
    return absl::InvalidArgumentError(
        Cat("regex '", pattern, "' does not compile: ", reinterpret_cast<const char*>(message)));
  }
  return std::unique_ptr<Regex>(new Regex(std::string(pattern), regex));
}

Regex::~Regex() { onig_free(regex_); }

bool Regex::Search(std::string_view text) const {
  const auto* str = reinterpret_cast<const OnigUChar*>(text.data());
  const OnigUChar* end = str + text.size();
  // (Invalid UTF-8 is then no match rather than a read past a truncated sequence.)
  return onig_search(regex_, str, end, str, end, nullptr,
                     ONIG_OPTION_CHECK_VALIDITY_OF_STRING) >= 0;
}

void Regex::FindAll(std::string_view text, std::vector<Match>* matches) const {
  matches->clear();
  OnigRegion* region = onig_region_new();
  const auto* str = reinterpret_cast<const OnigUChar*>(text.data());
  const OnigUChar* end = str + text.size();
  size_t last_end = 0;
  bool have_last = false;
  size_t last_match_end = 0;
  while (last_end <= text.size()) {
    const int pos = onig_search(regex_, str, end, str + last_end, end, region, ONIG_OPTION_NONE);
    if (pos < 0) break;
    const auto begin = static_cast<size_t>(region->beg[0]);
    const auto stop = static_cast<size_t>(region->end[0]);
    if (begin == stop && have_last && last_match_end == stop) {
      last_end += last_end < text.size()
                      ? Utf8SequenceLength(static_cast<unsigned char>(text[last_end]))
                      : 1;
      continue;
    }
    last_end = stop;
    have_last = true;
    last_match_end = stop;
    matches->push_back({static_cast<uint32_t>(begin), static_cast<uint32_t>(stop)});
  }
  onig_region_free(region, 1);
}

}  // namespace warmroute::tokenize
