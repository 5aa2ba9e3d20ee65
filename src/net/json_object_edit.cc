#include "net/json_object_edit.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>


namespace warmroute::net {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// A small scanner over a JSON text: positions of the top-level members' values.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  size_t pos() const { return pos_; }
  void SkipSpace() {
    while (pos_ < text_.size() && IsSpace(text_[pos_])) ++pos_;
  }
  bool Eat(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  // A string starting at pos (after spaces); its unescaped content, or nullopt if malformed.
  std::optional<std::string> String() {
    SkipSpace();
    if (pos_ >= text_.size() || text_[pos_] != '"') return std::nullopt;
    ++pos_;
    std::string out;
    while (pos_ < text_.size()) {
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) return std::nullopt;
      const char e = text_[pos_++];
      switch (e) {
        case '"': case '\\': case '/': out.push_back(e); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          if (pos_ + 4 > text_.size()) return std::nullopt;
          uint32_t code = 0;
          for (int i = 0; i < 4; ++i) {
            const char h = text_[pos_++];
            code <<= 4;
            if (h >= '0' && h <= '9') code |= h - '0';
            else if (h >= 'a' && h <= 'f') code |= h - 'a' + 10;
            else if (h >= 'A' && h <= 'F') code |= h - 'A' + 10;
            else return std::nullopt;
          }
          // Keys compared here are ASCII; other code points only need to differ from them.
          if (code < 0x80) {
            out.push_back(static_cast<char>(code));
          } else {
            out.append("\xff");  // never equal to an ASCII key
            out.append(std::to_string(code));
          }
          break;
        }
        default: return std::nullopt;
      }
    }
    return std::nullopt;
  }

  // Skips one value of any type; false if malformed.
  bool SkipValue() {
    SkipSpace();
    if (pos_ >= text_.size()) return false;
    const char c = text_[pos_];
    if (c == '"') return String().has_value();
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++pos_;
      if (Eat(close)) return true;
      do {
        if (c == '{') {
          if (!String() || !Eat(':')) return false;
        }
        if (!SkipValue()) return false;
      } while (Eat(','));
      return Eat(close);
    }
    // A literal or number: up to the next delimiter.
    const size_t start = pos_;
    while (pos_ < text_.size() && !IsSpace(text_[pos_]) && text_[pos_] != ',' &&
           text_[pos_] != '}' && text_[pos_] != ']') {
      ++pos_;
    }
    return pos_ > start;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

absl::Status NotAnObject() { return absl::InvalidArgumentError("the body is not a JSON object"); }

}  // namespace

absl::StatusOr<std::string> InsertTopLevelMember(std::string_view object, std::string_view key,
                                                 std::string_view raw_value) {
  Scanner scan(object);
  if (!scan.Eat('{')) return NotAnObject();
  const size_t open = scan.pos();
  const bool empty = scan.Eat('}');
  std::string out;
  out.reserve(object.size() + key.size() + raw_value.size() + 4);
  out.append(object.substr(0, open));
  out.push_back('"');
  out.append(key);
  out.append("\":");
  out.append(raw_value);
  if (!empty) out.push_back(',');
  out.append(object.substr(open));
  return out;
}

absl::StatusOr<std::string> SetTopLevelMember(std::string_view object, std::string_view key,
                                              std::string_view raw_value) {
  Scanner scan(object);
  if (!scan.Eat('{')) return NotAnObject();
  std::vector<std::pair<size_t, size_t>> spans;  // [begin, end) of each value of `key`
  if (!scan.Eat('}')) {
    do {
      std::optional<std::string> name = scan.String();
      if (!name || !scan.Eat(':')) return NotAnObject();
      scan.SkipSpace();
      const size_t begin = scan.pos();
      if (!scan.SkipValue()) return NotAnObject();
      if (*name == key) spans.emplace_back(begin, scan.pos());
    } while (scan.Eat(','));
    if (!scan.Eat('}')) return NotAnObject();
  }
  if (spans.empty()) return InsertTopLevelMember(object, key, raw_value);
  std::string out;
  out.reserve(object.size() + spans.size() * raw_value.size());
  size_t copied = 0;
  for (const auto& [begin, end] : spans) {
    out.append(object.substr(copied, begin - copied));
    out.append(raw_value);
    copied = end;
  }
  out.append(object.substr(copied));
  return out;
}

}  // namespace warmroute::net
