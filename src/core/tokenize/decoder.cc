#include "core/tokenize/decoder.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/tokenize/bpe_model.h"
#include "core/tokenize/json_fields.h"
#include "core/tokenize/utf8.h"

namespace warmroute::tokenize {
namespace {

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

std::vector<std::string_view> Characters(std::string_view s) {
  std::vector<std::string_view> chars;
  size_t i = 0;
  while (i < s.size()) {
    const size_t start = i;
    i += Utf8SequenceLength(static_cast<unsigned char>(s[i]));
    chars.push_back(s.substr(start, std::min(i, s.size()) - start));
  }
  return chars;
}

absl::StatusOr<size_t> CountMember(simdjson::dom::object json, std::string_view key,
                                   std::string_view where) {
  int64_t n = 0;
  if (json[key].get_int64().get(n) != simdjson::SUCCESS || n < 0) {
    return FileError(Member(where, key), "must be a non-negative integer");
  }
  return static_cast<size_t>(n);
}

}  // namespace

absl::StatusOr<Decoder> Decoder::FromJson(simdjson::dom::element json, std::string_view where) {
  Decoder decoder;
  if (json.is_null()) return decoder;
  absl::Status status = AddSteps(json, where, &decoder.steps_);
  if (!status.ok()) return status;
  return decoder;
}

absl::Status Decoder::AddSteps(simdjson::dom::element json, std::string_view where,
                               std::vector<Step>* steps) {
  return ForEachComponent(
      json, where, "decoders",
      [&](simdjson::dom::object object, std::string_view type,
          std::string_view where) -> absl::Status {
        Step step{.kind = Kind::kFuse};
        if (type == "ByteLevel") {
          step.kind = Kind::kByteLevel;
        } else if (type == "ByteFallback") {
          step.kind = Kind::kByteFallback;
        } else if (type == "Fuse") {
          step.kind = Kind::kFuse;
        } else if (type == "Metaspace") {
          step.kind = Kind::kMetaspace;
          absl::StatusOr<std::string_view> replacement =
              StringMember(object, "replacement", where, "\xE2\x96\x81");
          if (!replacement.ok()) return replacement.status();
          step.text = std::string(*replacement);
          absl::StatusOr<std::string_view> scheme =
              StringMember(object, "prepend_scheme", where, "always");
          if (!scheme.ok()) return scheme.status();
          absl::StatusOr<bool> prefix = BoolMember(object, "add_prefix_space", where, true);
          if (!prefix.ok()) return prefix.status();
          step.prepend = *scheme != "never" && *prefix;
        } else if (type == "Strip") {
          step.kind = Kind::kStrip;
          absl::StatusOr<std::string_view> content = StringMember(object, "content", where);
          if (!content.ok()) return content.status();
          if (Characters(*content).size() != 1) {
            return FileError(Member(where, "content"), "must be one character");
          }
          step.text = std::string(*content);
          absl::StatusOr<size_t> start = CountMember(object, "start", where);
          if (!start.ok()) return start.status();
          absl::StatusOr<size_t> stop = CountMember(object, "stop", where);
          if (!stop.ok()) return stop.status();
          step.start = *start;
          step.stop = *stop;
        } else if (type == "Replace") {
          step.kind = Kind::kReplace;
          absl::StatusOr<Pattern> pattern = Pattern::FromMember(object, where);
          if (!pattern.ok()) return pattern.status();
          step.pattern = std::move(*pattern);
          absl::StatusOr<std::string_view> content = StringMember(object, "content", where);
          if (!content.ok()) return content.status();
          step.text = std::string(*content);
        } else {
          return Unsupported(where, type);
        }
        steps->push_back(std::move(step));
        return absl::OkStatus();
      });
}

void Decoder::ApplyStep(const Step& step, std::vector<std::string>* tokens) {
  std::vector<std::string> out;
  switch (step.kind) {
    case Kind::kByteLevel: {
      std::string bytes;
      for (const std::string& token : *tokens) {
        std::string raw;
        bool all = true;
        for (std::string_view ch : Characters(token)) {
          const std::optional<uint8_t> b = ByteLevelByte(ch);
          if (!b.has_value()) {
            all = false;
            break;
          }
          raw.push_back(static_cast<char>(*b));
        }
        bytes += all ? raw : token;
      }
      out.push_back(IsWellFormedUtf8(bytes) ? bytes : RepairUtf8(bytes));
      break;
    }
    case Kind::kMetaspace:
      for (size_t i = 0; i < tokens->size(); ++i) {
        std::string t;
        for (std::string_view ch : Characters((*tokens)[i])) {
          if (ch != step.text) {
            t += ch;
          } else if (i != 0 || !step.prepend) {
            t += ' ';
          }
        }
        out.push_back(std::move(t));
      }
      break;
    case Kind::kByteFallback: {
      std::string pending;
      const auto flush = [&] {
        if (pending.empty()) return;
        if (IsWellFormedUtf8(pending)) {
          out.push_back(pending);
        } else {
          for (size_t k = 0; k < pending.size(); ++k) out.emplace_back(kReplacementChar);
        }
        pending.clear();
      };
      for (std::string& token : *tokens) {
        int value = -1;
        if (token.size() == 6 && token.starts_with("<0x") && token.back() == '>' &&
            std::isxdigit(static_cast<unsigned char>(token[3])) &&
            std::isxdigit(static_cast<unsigned char>(token[4]))) {
          value = std::stoi(token.substr(3, 2), nullptr, 16);
        }
        if (value >= 0) {
          pending.push_back(static_cast<char>(value));
        } else {
          flush();
          out.push_back(std::move(token));
        }
      }
      flush();
      break;
    }
    case Kind::kFuse:
      out.push_back(absl::StrJoin(*tokens, ""));
      break;
    case Kind::kStrip:
      for (const std::string& token : *tokens) {
        const std::vector<std::string_view> chars = Characters(token);
        size_t begin = 0, end = chars.size();
        while (begin < step.start && begin < end && chars[begin] == step.text) ++begin;
        size_t stripped = 0;
        while (stripped < step.stop && end > begin && chars[end - 1] == step.text) {
          --end;
          ++stripped;
        }
        std::string t;
        for (size_t k = begin; k < end; ++k) t += chars[k];
        out.push_back(std::move(t));
      }
      break;
    case Kind::kReplace:
      for (const std::string& token : *tokens) {
        std::vector<Match> matches;
        step.pattern.FindAll(token, &matches);
        std::string t;
        size_t at = 0;
        for (const Match& m : matches) {
          t.append(token, at, m.begin - at);
          t += step.text;
          at = m.end;
        }
        t.append(token, at, std::string::npos);
        out.push_back(std::move(t));
      }
      break;
  }
  tokens->swap(out);
}

std::string Decoder::Decode(std::vector<std::string> tokens) const {
  if (steps_.empty()) return absl::StrJoin(tokens, " ");
  for (const Step& step : steps_) ApplyStep(step, &tokens);
  return absl::StrJoin(tokens, "");
}

}  // namespace warmroute::tokenize
