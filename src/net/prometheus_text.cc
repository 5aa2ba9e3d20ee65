#include "net/prometheus_text.h"

#include <charconv>
#include <cstdint>
#include <limits>
#include <system_error>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace warmroute::net {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameStart(char c) { return IsAlpha(c) || c == '_' || c == ':'; }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c); }
bool IsLabelStart(char c) { return IsAlpha(c) || c == '_'; }
bool IsLabelChar(char c) { return IsLabelStart(c) || IsDigit(c); }

// ASCII case-insensitive equality (absl's takes absl::string_view, not std::string_view here).
bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// `s` quoted for an error message: at most 40 bytes, non-printable bytes escaped.
std::string Quote(std::string_view s) {
  constexpr size_t kMax = 40;
  return absl::StrCat("'", absl::CHexEscape(std::string(s.substr(0, kMax))),
                      s.size() > kMax ? "...'" : "'");
}

// A float as Go's strconv.ParseFloat reads it (decimal forms; "inf", "infinity" with an optional
// sign and "nan", case-insensitive). nullopt if `token` is not one, or out of double's range.
std::optional<double> ParseValue(std::string_view token) {
  if (token.empty()) return std::nullopt;
  size_t i = 0;
  bool negative = false;
  if (token[0] == '+' || token[0] == '-') {
    negative = token[0] == '-';
    i = 1;
  }
  const std::string_view rest = token.substr(i);
  if (EqualsIgnoreCase(rest, "inf") || EqualsIgnoreCase(rest, "infinity")) {
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  }
  if (i == 0 && EqualsIgnoreCase(rest, "nan")) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  // from_chars takes no sign and would accept "inf"/"nan" spellings we handled above.
  if (rest.empty() || !(IsDigit(rest[0]) || rest[0] == '.')) return std::nullopt;
  double value = 0;
  const char* end = rest.data() + rest.size();
  const auto [ptr, ec] = std::from_chars(rest.data(), end, value, std::chars_format::general);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return negative ? -value : value;
}

// An integer timestamp (milliseconds) with an optional sign.
bool IsTimestamp(std::string_view token) {
  if (!token.empty() && token[0] == '+') token.remove_prefix(1);
  if (token.empty() || !(IsDigit(token[0]) || (token[0] == '-' && token.size() > 1))) {
    return false;
  }
  int64_t ms = 0;
  const char* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, ms);
  return ec == std::errc() && ptr == end;
}

// Parses one sample line (no line terminator, not blank, not a comment).
class LineParser {
 public:
  explicit LineParser(std::string_view line) : line_(line) {}

  absl::Status Parse(MetricSample* sample) {
    SkipBlanks();
    const size_t name_start = pos_;
    if (AtEnd() || !IsNameStart(Peek())) {
      return Error(absl::StrCat("expected a metric name, got ", Quote(line_.substr(pos_))));
    }
    while (!AtEnd() && IsNameChar(Peek())) ++pos_;
    sample->name = std::string(line_.substr(name_start, pos_ - name_start));
    if (!AtEnd() && !IsBlank(Peek()) && Peek() != '{') {
      return Error(absl::StrCat("invalid character ", Quote(line_.substr(pos_, 1)),
                                " in metric name ", Quote(sample->name)));
    }
    SkipBlanks();
    if (!AtEnd() && Peek() == '{') {
      ++pos_;
      if (absl::Status s = ParseLabels(sample); !s.ok()) return s;
      SkipBlanks();
    }

    const std::string_view value_token = NextToken();
    if (value_token.empty()) return Error(absl::StrCat("missing value for ", Quote(sample->name)));
    const std::optional<double> value = ParseValue(value_token);
    if (!value.has_value()) {
      return Error(
          absl::StrCat("invalid value ", Quote(value_token), " for ", Quote(sample->name)));
    }
    sample->value = *value;

    SkipBlanks();
    const std::string_view timestamp = NextToken();
    if (!timestamp.empty() && !IsTimestamp(timestamp)) {
      return Error(absl::StrCat("invalid timestamp ", Quote(timestamp), " for ",
                                Quote(sample->name), " (expected integer milliseconds)"));
    }
    SkipBlanks();
    if (!AtEnd()) {
      return Error(absl::StrCat("unexpected text after the sample: ", Quote(line_.substr(pos_))));
    }
    return absl::OkStatus();
  }

 private:
  // After '{': label pairs up to and including '}'.
  absl::Status ParseLabels(MetricSample* sample) {
    while (true) {
      SkipBlanks();
      if (AtEnd()) return Error("unterminated label set (missing '}')");
      if (Peek() == '}') {
        ++pos_;
        return absl::OkStatus();
      }
      const size_t label_start = pos_;
      if (!IsLabelStart(Peek())) {
        return Error(absl::StrCat("expected a label name, got ", Quote(line_.substr(pos_))));
      }
      while (!AtEnd() && IsLabelChar(Peek())) ++pos_;
      std::string label(line_.substr(label_start, pos_ - label_start));
      SkipBlanks();
      if (AtEnd() || Peek() != '=') {
        return Error(absl::StrCat("expected '=' after label name ", Quote(label)));
      }
      ++pos_;
      SkipBlanks();
      if (AtEnd() || Peek() != '"') {
        return Error(absl::StrCat("expected '\"' to open the value of label ", Quote(label)));
      }
      ++pos_;
      std::string value;
      if (absl::Status s = ParseLabelValue(label, &value); !s.ok()) return s;
      for (const auto& existing : sample->labels) {
        if (existing.first == label) return Error(absl::StrCat("duplicate label ", Quote(label)));
      }
      sample->labels.emplace_back(std::move(label), std::move(value));
      SkipBlanks();
      if (AtEnd()) return Error("unterminated label set (missing '}')");
      if (Peek() == ',') {
        ++pos_;
      } else if (Peek() != '}') {
        return Error(absl::StrCat("expected ',' or '}' after the value of label ",
                                  Quote(sample->labels.back().first), ", got ",
                                  Quote(line_.substr(pos_))));
      }
    }
  }

  // After the opening quote: the value up to and including the closing quote.
  absl::Status ParseLabelValue(std::string_view label, std::string* value) {
    while (!AtEnd()) {
      const char c = line_[pos_++];
      if (c == '"') return absl::OkStatus();
      if (c != '\\') {
        value->push_back(c);
        continue;
      }
      if (AtEnd()) break;
      const char escaped = line_[pos_++];
      switch (escaped) {
        case '\\':
          value->push_back('\\');
          break;
        case '"':
          value->push_back('"');
          break;
        case 'n':
          value->push_back('\n');
          break;
        default:
          return Error(absl::StrCat("invalid escape ", Quote(line_.substr(pos_ - 2, 2)),
                                    " in the value of label ", Quote(label),
                                    " (allowed: \\\\, \\\", \\n)"));
      }
    }
    return Error(absl::StrCat("unterminated value of label ", Quote(label)));
  }

  std::string_view NextToken() {
    const size_t start = pos_;
    while (!AtEnd() && !IsBlank(Peek())) ++pos_;
    return line_.substr(start, pos_ - start);
  }

  void SkipBlanks() {
    while (!AtEnd() && IsBlank(Peek())) ++pos_;
  }
  bool AtEnd() const { return pos_ >= line_.size(); }
  char Peek() const { return line_[pos_]; }
  static absl::Status Error(std::string_view message) {
    return absl::InvalidArgumentError(std::string(message));
  }

  std::string_view line_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<std::vector<MetricSample>> ParsePrometheusText(std::string_view text) {
  std::vector<MetricSample> samples;
  int64_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);

    size_t first = 0;
    while (first < line.size() && IsBlank(line[first])) ++first;
    if (first == line.size() || line[first] == '#') continue;

    MetricSample sample;
    if (absl::Status status = LineParser(line).Parse(&sample); !status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": ", status.message()));
    }
    samples.push_back(std::move(sample));
  }
  return samples;
}

std::optional<std::string_view> FindLabel(const MetricSample& sample, std::string_view name) {
  for (const auto& [label, value] : sample.labels) {
    if (label == name) return std::string_view(value);
  }
  return std::nullopt;
}

}  // namespace warmroute::net
