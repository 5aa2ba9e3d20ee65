#include "core/tokenize/pattern.h"

#include "absl/strings/str_cat.h"
#include "core/tokenize/json_fields.h"

namespace warmroute::tokenize {

absl::StatusOr<Pattern> Pattern::FromJson(simdjson::dom::element json, std::string_view where) {
  simdjson::dom::object object;
  if (json.get_object().get(object) != simdjson::SUCCESS || object.size() != 1) {
    return FileError(where, "must be {\"String\": ...} or {\"Regex\": ...}");
  }
  const auto [key, value] = *object.begin();
  std::string_view text;
  if (value.get_string().get(text) != simdjson::SUCCESS) {
    return FileError(Member(where, key), "must be a string");
  }
  if (key == "String") {
    if (text.empty()) return FileError(Member(where, key), "is empty");
    return Literal(std::string(text));
  }
  if (key == "Regex") {
    absl::StatusOr<Pattern> pattern = FromRegex(text);
    if (!pattern.ok()) {
      return FileError(Member(where, key), std::string(pattern.status().message()));
    }
    return pattern;
  }
  return FileError(where, Cat("has unknown kind '", key, "'"));
}

absl::StatusOr<Pattern> Pattern::FromMember(simdjson::dom::object json, std::string_view where) {
  simdjson::dom::element pattern;
  if (json["pattern"].get(pattern) != simdjson::SUCCESS) {
    return FileError(Member(where, "pattern"), "is missing");
  }
  return FromJson(pattern, Member(where, "pattern"));
}

Pattern Pattern::Literal(std::string literal) {
  Pattern p;
  p.source_ = std::move(literal);
  return p;
}

absl::StatusOr<Pattern> Pattern::FromRegex(std::string_view regex) {
  absl::StatusOr<std::unique_ptr<Regex>> compiled = Regex::Compile(regex);
  if (!compiled.ok()) return compiled.status();
  Pattern p;
  p.source_ = std::string(regex);
  p.regex_ = std::move(*compiled);
  return p;
}

void Pattern::FindAll(std::string_view text, std::vector<Match>* matches) const {
  if (regex_ != nullptr) {
    regex_->FindAll(text, matches);
    return;
  }
  matches->clear();
  size_t from = 0;
  while (true) {
    const size_t at = text.find(source_, from);
    if (at == std::string_view::npos) break;
    matches->push_back({static_cast<uint32_t>(at), static_cast<uint32_t>(at + source_.size())});
    from = at + source_.size();
  }
}

}  // namespace warmroute::tokenize
