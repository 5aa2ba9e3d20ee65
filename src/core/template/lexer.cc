#include "core/template/lexer.h"

#include <algorithm>

#include "core/template/cat.h"
#include "core/template/py_text.h"

namespace warmroute::jinja {
namespace {

bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c); }

// The length of the Python whitespace at text[pos...] (Python's \s).
size_t SpaceRun(std::string_view text, size_t pos) {
  const std::string_view stripped = StripSpace(text.substr(pos), true, false);
  return text.size() - pos - stripped.size();
}

// Python's "unicode-escape" decoding of a Jinja string literal's body.
absl::StatusOr<std::string> Unescape(std::string_view body, int line) {
  std::string out;
  out.reserve(body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (c != '\\' || i + 1 >= body.size()) {
      out.push_back(c);
      continue;
    }
    const char e = body[++i];
    const auto hex = [&](size_t digits) -> absl::StatusOr<char32_t> {
      char32_t v = 0;
      for (size_t k = 1; k <= digits; ++k) {
        if (i + k >= body.size()) {
          return absl::InvalidArgumentError(Cat("truncated escape at line ", line));
        }
        const char h = body[i + k];
        int d;
        if (IsDigit(h)) {
          d = h - '0';
        } else if (h >= 'a' && h <= 'f') {
          d = h - 'a' + 10;
        } else if (h >= 'A' && h <= 'F') {
          d = h - 'A' + 10;
        } else {
          return absl::InvalidArgumentError(Cat("bad escape at line ", line));
        }
        v = v * 16 + d;
      }
      i += digits;
      if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        return absl::InvalidArgumentError(Cat("bad escape at line ", line));
      }
      return v;
    };
    switch (e) {
      case '\n':
        break;
      case '\\':
      case '\'':
      case '"':
        out.push_back(e);
        break;
      case 'a':
        out.push_back('\a');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'v':
        out.push_back('\v');
        break;
      case 'x':
      case 'u':
      case 'U': {
        absl::StatusOr<char32_t> v = hex(e == 'x' ? 2 : (e == 'u' ? 4 : 8));
        if (!v.ok()) return v.status();
        AppendUtf8(*v, out);
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          char32_t v = e - '0';
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7';
               ++k) {
            v = v * 8 + (body[++i] - '0');
          }
          AppendUtf8(v, out);
        } else if (e == 'N') {
          return absl::InvalidArgumentError(Cat("unsupported \\N{...} escape at line ", line));
        } else {
          out.push_back('\\');
          out.push_back(e);
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {}

  absl::StatusOr<std::vector<Token>> Run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      const size_t tag = FindTagStart(pos_);
      std::string_view text = std::string_view(src_).substr(pos_, tag - pos_);
      if (tag == src_.size()) {
        Emit(TokenType::kData, std::string(text));
        Advance(tag);
        break;
      }
      const char kind = src_[tag + 1];  // '{', '%' or '#'
      const char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+')
                            ? src_[tag + 2]
                            : 0;
      if (sign == '-') {
        text = StripSpace(text, false, true);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: only whitespace between the line's start and the tag.
        const size_t nl = text.rfind('\n');
        const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
        if ((l_pos > 0 || line_starting) && l_pos < text.size() &&
            StripSpace(text.substr(l_pos), true, false).empty()) {
          text = text.substr(0, l_pos);
        }
      }
      if (!text.empty()) Emit(TokenType::kData, std::string(text));
      Advance(tag);
      const size_t body = tag + 2 + (sign != 0);
      absl::Status status;
      if (kind == '#') {
        status = Comment(body);
      } else if (kind == '%' && IsRaw(body)) {
        status = Raw(body);
      } else {
        status = Tag(kind, body);
      }
      if (!status.ok()) return status;
      line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
    }
    Emit(TokenType::kEof, "");
    return std::move(tokens_);
  }

 private:
  size_t FindTagStart(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return src_.size();
  }

  void Emit(TokenType type, std::string value) {
    tokens_.push_back(Token{type, std::move(value), line_});
  }

  // Moves to `to`, counting lines.
  void Advance(size_t to) {
    line_ += static_cast<int>(std::count(src_.begin() + pos_, src_.begin() + to, '\n'));
    pos_ = to;
  }

  // After a block or comment end: trim_blocks drops one newline.
  size_t TrimBlock(size_t after) const {
    return after < src_.size() && src_[after] == '\n' ? after + 1 : after;
  }

  absl::Status Comment(size_t body) {
    const size_t end = src_.find("#}", body);
    if (end == std::string::npos) {
      return absl::InvalidArgumentError(Cat("missing end of comment tag at line ", line_));
    }
    size_t after = end + 2;
    if (end > body && src_[end - 1] == '-') {
      after += SpaceRun(src_, after);
    } else if (!(end > body && src_[end - 1] == '+')) {
      after = TrimBlock(after);
    }
    Advance(after);
    return absl::OkStatus();
  }

  bool IsRaw(size_t body) const {
    size_t i = body + SpaceRun(src_, body);
    if (src_.compare(i, 3, "raw") != 0) return false;
    i += 3;
    return i < src_.size() && (IsAsciiSpace(src_[i]) || src_[i] == '-' || src_[i] == '%');
  }

  absl::Status Raw(size_t body) {
    size_t i = body + SpaceRun(src_, body) + 3;
    i += SpaceRun(src_, i);
    if (src_.compare(i, 3, "-%}") == 0) {
      i += 3;
      i += SpaceRun(src_, i);
    } else if (src_.compare(i, 2, "%}") == 0) {
      i += 2;
    } else {
      return absl::InvalidArgumentError(Cat("malformed raw tag at line ", line_));
    }
    // The body runs to "{%[-+]? endraw [-+]?%}".
    for (size_t end = src_.find("{%", i); end != std::string::npos;
         end = src_.find("{%", end + 2)) {
      size_t k = end + 2;
      const char sign = k < src_.size() && (src_[k] == '-' || src_[k] == '+') ? src_[k] : 0;
      if (sign) ++k;
      k += SpaceRun(src_, k);
      if (src_.compare(k, 6, "endraw") != 0) continue;
      k += 6;
      k += SpaceRun(src_, k);
      size_t after;
      if (src_.compare(k, 3, "-%}") == 0) {
        after = k + 3 + SpaceRun(src_, k + 3);
      } else if (src_.compare(k, 3, "+%}") == 0) {
        after = k + 3;
      } else if (src_.compare(k, 2, "%}") == 0) {
        after = TrimBlock(k + 2);
      } else {
        continue;
      }
      std::string_view text = std::string_view(src_).substr(i, end - i);
      if (sign == '-') {
        text = StripSpace(text, false, true);
      } else if (sign != '+') {
        const size_t nl = text.rfind('\n');
        const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
        if (l_pos > 0 && l_pos < text.size() &&
            StripSpace(text.substr(l_pos), true, false).empty()) {
          text = text.substr(0, l_pos);
        }
      }
      Advance(i);
      if (!text.empty()) Emit(TokenType::kData, std::string(text));
      Advance(after);
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(Cat("missing endraw for the raw block at line ", line_));
  }

  // The tokens of a {{ }} or {% %} tag whose body starts at `body`.
  absl::Status Tag(char kind, size_t body) {
    const bool block = kind == '%';
    Emit(block ? TokenType::kBlockBegin : TokenType::kVariableBegin, "");
    Advance(body);
    int balance = 0;
    size_t i = body;
    const size_t n = src_.size();
    while (true) {
      if (i >= n) {
        return absl::InvalidArgumentError(
            Cat("unexpected end of template: missing '", block ? "%}" : "}}", "' at line ", line_));
      }
      if (balance == 0) {
        const std::string_view end = block ? "%}" : "}}";
        size_t after = 0;
        if (src_[i] == '-' && src_.compare(i + 1, 2, end) == 0) {
          after = i + 3 + SpaceRun(src_, i + 3);
        } else if (block && src_[i] == '+' && src_.compare(i + 1, 2, end) == 0) {
          after = i + 3;
        } else if (src_.compare(i, 2, end) == 0) {
          after = block ? TrimBlock(i + 2) : i + 2;
        }
        if (after != 0) {
          Advance(i);
          Emit(block ? TokenType::kBlockEnd : TokenType::kVariableEnd, "");
          Advance(after);
          return absl::OkStatus();
        }
      }
      const char c = src_[i];
      if (IsAsciiSpace(c)) {
        ++i;
        continue;
      }
      Advance(i);
      if (IsDigit(c)) {
        i = Number(i);
      } else if (IsNameStart(c)) {
        size_t j = i;
        while (j < n && IsNameChar(src_[j])) ++j;
        Emit(TokenType::kName, src_.substr(i, j - i));
        i = j;
      } else if (c == '\'' || c == '"') {
        size_t j = i + 1;
        while (j < n && src_[j] != c) j += src_[j] == '\\' ? 2 : 1;
        if (j >= n) {
          return absl::InvalidArgumentError(Cat("unterminated string at line ", line_));
        }
        absl::StatusOr<std::string> value =
            Unescape(std::string_view(src_).substr(i + 1, j - i - 1), line_);
        if (!value.ok()) return value.status();
        Emit(TokenType::kString, *std::move(value));
        i = j + 1;
      } else {
        static constexpr std::string_view kTwo[] = {"**", "//", "==", "!=", ">=", "<="};
        std::string op;
        for (std::string_view two : kTwo) {
          if (src_.compare(i, 2, two) == 0) op = std::string(two);
        }
        if (op.empty()) {
          if (std::string_view("+-*/%~[](){}<>=.:|,;").find(c) == std::string_view::npos) {
            return absl::InvalidArgumentError(
                Cat("unexpected character '", std::string(1, c), "' at line ", line_));
          }
          op = std::string(1, c);
        }
        if (op == "(" || op == "[" || op == "{") ++balance;
        if (op == ")" || op == "]" || op == "}") {
          if (balance == 0) {
            return absl::InvalidArgumentError(Cat("unexpected '", op, "' at line ", line_));
          }
          --balance;
        }
        i += op.size();
        Emit(TokenType::kOperator, std::move(op));
      }
    }
  }

  // An integer or float literal at `i` (digits, '_' separators, a fraction, an exponent).
  size_t Number(size_t i) {
    const size_t n = src_.size();
    const auto digits = [&](size_t j, std::string& out) {
      while (j < n && (IsDigit(src_[j]) || (src_[j] == '_' && j + 1 < n && IsDigit(src_[j + 1])))) {
        if (src_[j] != '_') out.push_back(src_[j]);
        ++j;
      }
      return j;
    };
    std::string text;
    size_t j = digits(i, text);
    bool is_float = false;
    if (j + 1 < n && src_[j] == '.' && IsDigit(src_[j + 1])) {
      text.push_back('.');
      j = digits(j + 1, text);
      is_float = true;
    }
    if (j < n && (src_[j] == 'e' || src_[j] == 'E')) {
      size_t k = j + 1;
      if (k < n && (src_[k] == '+' || src_[k] == '-')) ++k;
      if (k < n && IsDigit(src_[k])) {
        text.append(src_, j, k - j);
        j = digits(k, text);
        is_float = true;
      }
    }
    Emit(is_float ? TokenType::kFloat : TokenType::kInteger, std::move(text));
    return j;
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

absl::StatusOr<std::vector<Token>> Tokenize(std::string_view source) {
  // Jinja splits the source into lines and joins them with "\n" (any line end becomes "\n"),
  // dropping one trailing newline (keep_trailing_newline=False).
  std::string normalized;
  normalized.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      normalized.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      normalized.push_back(source[i]);
    }
  }
  if (!normalized.empty() && normalized.back() == '\n') normalized.pop_back();
  return Lexer(std::move(normalized)).Run();
}

}  // namespace warmroute::jinja
