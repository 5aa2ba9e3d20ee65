#include "core/tokenize/normalizer.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>

#include <cctype>

#include "absl/strings/str_cat.h"
#include "core/tokenize/json_fields.h"
#include "core/tokenize/utf8.h"

namespace warmroute::tokenize {
namespace {

bool IsAscii(std::string_view s) {
  for (const char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

// True when every code point of `s` is below U+0300: NFC leaves such text unchanged (none of
// them decomposes canonically or composes with a preceding character).
bool BelowCombiningMarks(std::string_view s) {
  for (const char c : s) {
    if (static_cast<unsigned char>(c) >= 0xCC) return false;
  }
  return true;
}

const icu::Normalizer2* IcuInstance(bool compat, bool compose) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  if (compose) {
    n = compat ? icu::Normalizer2::getNFKCInstance(status)
               : icu::Normalizer2::getNFCInstance(status);
  } else {
    n = compat ? icu::Normalizer2::getNFKDInstance(status)
               : icu::Normalizer2::getNFDInstance(status);
  }
  return U_SUCCESS(status) ? n : nullptr;
}

bool IcuNormalizeRun(const icu::Normalizer2* n, std::string_view in, std::string* out) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::StringPiece piece(in.data(), static_cast<int32_t>(in.size()));
  if (n->isNormalizedUTF8(piece, status) && U_SUCCESS(status)) {
    out->append(in);
    return false;
  }
  status = U_ZERO_ERROR;
  std::string normalized;
  icu::StringByteSink<std::string> sink(&normalized, static_cast<int32_t>(in.size()));
  n->normalizeUTF8(0, piece, sink, nullptr, status);
  if (!U_SUCCESS(status)) {
    out->append(in);
    return false;
  }
  out->append(normalized);
  return normalized != in;
}

// True when `cp` was assigned after Unicode 9.0, the version of the Rust library's normalization
// tables: to them it is an unassigned code point, which no normalization form changes or
// combines with anything.
bool NewerThanRustTables(char32_t cp) {
  UVersionInfo age;
  u_charAge(static_cast<UChar32>(cp), age);
  return age[0] > 9;
}

// `n` applied as the Rust library applies it: the text between code points newer than its tables
// is normalized run by run, and those code points are kept as they are.
bool IcuNormalize(const icu::Normalizer2* n, std::string_view in, std::string* out) {
  out->clear();
  size_t i = 0;
  bool newer = false;
  while (i < in.size() && !newer) {
    if (static_cast<unsigned char>(in[i]) < 0x80) {
      ++i;
      continue;
    }
    newer = NewerThanRustTables(DecodeUtf8(in, &i));
  }
  if (!newer) {
    UErrorCode status = U_ZERO_ERROR;
    const icu::StringPiece piece(in.data(), static_cast<int32_t>(in.size()));
    if (n->isNormalizedUTF8(piece, status) && U_SUCCESS(status)) return false;
    return IcuNormalizeRun(n, in, out);
  }
  bool changed = false;
  size_t run = 0;
  i = 0;
  while (i < in.size()) {
    if (static_cast<unsigned char>(in[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t start = i;
    if (!NewerThanRustTables(DecodeUtf8(in, &i))) continue;
    changed |= IcuNormalizeRun(n, in.substr(run, start - run), out);
    out->append(in.substr(start, i - start));
    run = i;
  }
  changed |= IcuNormalizeRun(n, in.substr(run), out);
  return changed;
}

// Rust's char::to_lowercase: ICU's simple lowercase mapping of each code point, except U+0130
// (the one character whose full lowercase mapping is two code points).
bool Lowercase(std::string_view in, std::string* out) {
  bool changed = false;
  out->clear();
  out->reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    const auto c = static_cast<unsigned char>(in[i]);
    if (c < 0x80) {
      const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : static_cast<char>(c);
      changed |= lower != static_cast<char>(c);
      out->push_back(lower);
      ++i;
      continue;
    }
    const size_t start = i;
    const char32_t cp = DecodeUtf8(in, &i);
    if (cp == 0x130) {
      out->append("i\xCC\x87");
      changed = true;
      continue;
    }
    const auto lower = static_cast<char32_t>(u_tolower(static_cast<UChar32>(cp)));
    if (lower == cp) {
      out->append(in.substr(start, i - start));
    } else {
      AppendUtf8(lower, out);
      changed = true;
    }
  }
  return changed;
}

bool Replace(const Pattern& pattern, std::string_view content, std::string_view in,
             std::string* out) {
  std::vector<Match> matches;
  pattern.FindAll(in, &matches);
  bool changed = false;
  out->clear();
  size_t at = 0;
  for (const Match& m : matches) {
    if (m.begin == m.end) continue;
    out->append(in.substr(at, m.begin - at));
    out->append(content);
    at = m.end;
    changed = true;
  }
  out->append(in.substr(at));
  return changed;
}

}  // namespace

absl::StatusOr<Normalizer> Normalizer::FromJson(simdjson::dom::element json,
                                                std::string_view where) {
  Normalizer normalizer;
  if (json.is_null()) return normalizer;
  absl::Status status = AddSteps(json, where, &normalizer.steps_);
  if (!status.ok()) return status;
  for (const Step& step : normalizer.steps_) {
    if (step.kind != Kind::kNfc && step.kind != Kind::kNfkc && step.kind != Kind::kNfd &&
        step.kind != Kind::kNfkd) {
      continue;
    }
    if (IcuInstance(step.kind == Kind::kNfkc || step.kind == Kind::kNfkd,
                    step.kind == Kind::kNfc || step.kind == Kind::kNfkc) == nullptr) {
      return absl::InternalError("ICU normalization data is not available");
    }
  }
  return normalizer;
}

absl::Status Normalizer::AddSteps(simdjson::dom::element json, std::string_view where,
                                  std::vector<Step>* steps) {
  return ForEachComponent(
      json, where, "normalizers",
      [&](simdjson::dom::object object, std::string_view type,
          std::string_view where) -> absl::Status {
        if (type == "NFC") {
          steps->push_back({.kind = Kind::kNfc});
        } else if (type == "NFKC") {
          steps->push_back({.kind = Kind::kNfkc});
        } else if (type == "NFD") {
          steps->push_back({.kind = Kind::kNfd});
        } else if (type == "NFKD") {
          steps->push_back({.kind = Kind::kNfkd});
        } else if (type == "Lowercase") {
          steps->push_back({.kind = Kind::kLowercase});
        } else if (type == "Replace") {
          absl::StatusOr<Pattern> pattern = Pattern::FromMember(object, where);
          if (!pattern.ok()) return pattern.status();
          absl::StatusOr<std::string_view> content = StringMember(object, "content", where);
          if (!content.ok()) return content.status();
          steps->push_back({Kind::kReplace, std::move(*pattern), std::string(*content)});
        } else if (type == "Prepend") {
          absl::StatusOr<std::string_view> prepend = StringMember(object, "prepend", where);
          if (!prepend.ok()) return prepend.status();
          steps->push_back({Kind::kPrepend, Pattern::Literal(" "), std::string(*prepend)});
        } else {
          return Unsupported(where, type);
        }
        return absl::OkStatus();
      });
}

bool Normalizer::ApplyStep(const Step& step, std::string_view in, bool at_piece_start,
                           std::string* out) {
  switch (step.kind) {
    case Kind::kNfc:
      if (BelowCombiningMarks(in)) return false;
      return IcuNormalize(IcuInstance(false, true), in, out);
    case Kind::kNfkc:
      if (IsAscii(in)) return false;
      return IcuNormalize(IcuInstance(true, true), in, out);
    case Kind::kNfd:
      if (IsAscii(in)) return false;
      return IcuNormalize(IcuInstance(false, false), in, out);
    case Kind::kNfkd:
      if (IsAscii(in)) return false;
      return IcuNormalize(IcuInstance(true, false), in, out);
    case Kind::kLowercase:
      return Lowercase(in, out);
    case Kind::kReplace:
      return Replace(step.pattern, step.text, in, out);
    case Kind::kPrepend:
      if (!at_piece_start || in.empty()) return false;
      *out = Cat(step.text, in);
      return true;
  }
  return false;
}

bool Normalizer::Apply(std::string_view text, bool at_piece_start, std::string* out) const {
  bool changed = false;
  std::string scratch;
  for (const Step& step : steps_) {
    std::string_view in = changed ? std::string_view(*out) : text;
    if (ApplyStep(step, in, at_piece_start, &scratch)) {
      out->swap(scratch);
      changed = true;
    }
  }
  return changed;
}

bool Normalizer::CutsAfterNewline(char after) const {
  const auto u = static_cast<unsigned char>(after);
  const char lower = static_cast<char>(std::tolower(u)), upper = static_cast<char>(std::toupper(u));
  for (const Step& step : steps_) {
    if (step.kind != Kind::kReplace) continue;
    if (!step.pattern.is_literal()) return false;
    if (step.pattern.source().find_first_of(std::string{'\n', lower, upper}) != std::string::npos) {
      return false;
    }
  }
  return true;
}

}  // namespace warmroute::tokenize
