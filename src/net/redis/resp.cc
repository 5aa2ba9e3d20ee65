#include "net/redis/resp.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace warmroute::net {
namespace {

absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("malformed RESP reply: ", what));
}

// Parses an optionally negative decimal integer that fills `text` entirely.
absl::StatusOr<int64_t> ParseInteger(std::string_view text) {
  bool negative = false;
  if (!text.empty() && text.front() == '-') {
    negative = true;
    text.remove_prefix(1);
  }
  if (text.empty() || text.size() > 19) return Malformed("bad integer");
  uint64_t magnitude = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return Malformed("bad integer");
    magnitude = magnitude * 10 + static_cast<uint64_t>(c - '0');
  }
  // 19 digits fit in uint64; INT64_MIN's magnitude is INT64_MAX + 1.
  const uint64_t limit = static_cast<uint64_t>(INT64_MAX) + (negative ? 1 : 0);
  if (magnitude > limit) return Malformed("integer out of range");
  if (negative) return static_cast<int64_t>(0 - magnitude);
  return static_cast<int64_t>(magnitude);
}

// Recursive descent over `input_`; every step returns true (done), false (need more input) or
// an error.
class Parser {
 public:
  explicit Parser(std::string_view input) : input_(input) {}

  size_t position() const { return position_; }

  absl::StatusOr<bool> Value(RespValue& value, int depth) {
    if (depth > kMaxRespDepth) return Malformed("arrays nested too deeply");
    std::string_view line;
    absl::StatusOr<bool> got = Line(line);
    if (!got.ok() || !*got) return got;
    if (line.empty()) return Malformed("empty type line");
    const char type = line.front();
    line.remove_prefix(1);
    value.elements.clear();
    value.text.clear();
    value.integer = 0;
    switch (type) {
      case '+':
        value.kind = RespValue::Kind::kSimpleString;
        value.text.assign(line);
        return true;
      case '-':
        value.kind = RespValue::Kind::kError;
        value.text.assign(line);
        return true;
      case ':': {
        absl::StatusOr<int64_t> n = ParseInteger(line);
        if (!n.ok()) return n.status();
        value.kind = RespValue::Kind::kInteger;
        value.integer = *n;
        return true;
      }
      case '$':
        return Bulk(line, value);
      case '*':
        return Array(line, value, depth);
      default:
        return Malformed(absl::StrCat("unknown type byte 0x",
                                      absl::BytesToHexString(absl::string_view(&type, 1)),
                                      " (RESP3 is not supported)"));
    }
  }

 private:
  // The next line without its CRLF.
  absl::StatusOr<bool> Line(std::string_view& line) {
    const size_t end = input_.find_first_of("\r\n", position_);
    if (end == std::string_view::npos) {
      if (input_.size() - position_ > kMaxRespLineBytes) return Malformed("line too long");
      return false;
    }
    if (end - position_ > kMaxRespLineBytes) return Malformed("line too long");
    if (input_[end] == '\n') return Malformed("LF without CR");
    if (end + 1 == input_.size()) return false;
    if (input_[end + 1] != '\n') return Malformed("CR without LF");
    line = input_.substr(position_, end - position_);
    position_ = end + 2;
    return true;
  }

  absl::StatusOr<bool> Bulk(std::string_view header, RespValue& value) {
    absl::StatusOr<int64_t> length = ParseInteger(header);
    if (!length.ok()) return length.status();
    if (*length == -1) {
      value.kind = RespValue::Kind::kNull;
      return true;
    }
    if (*length < 0) return Malformed("negative bulk length");
    if (static_cast<uint64_t>(*length) > kMaxRespBulkBytes) return Malformed("bulk too large");
    const size_t n = static_cast<size_t>(*length);
    if (input_.size() - position_ < n + 2) return false;
    if (input_.substr(position_ + n, 2) != "\r\n") return Malformed("bulk without CRLF");
    value.kind = RespValue::Kind::kBulkString;
    value.text.assign(input_.substr(position_, n));
    position_ += n + 2;
    return true;
  }

  absl::StatusOr<bool> Array(std::string_view header, RespValue& value, int depth) {
    absl::StatusOr<int64_t> count = ParseInteger(header);
    if (!count.ok()) return count.status();
    if (*count == -1) {
      value.kind = RespValue::Kind::kNull;
      return true;
    }
    if (*count < 0) return Malformed("negative array length");
    if (*count > kMaxRespArrayElements) return Malformed("array too long");
    value.kind = RespValue::Kind::kArray;
    // Not `count` elements up front: the peer's claim is checked against the bytes that come.
    value.elements.reserve(static_cast<size_t>(std::min<int64_t>(*count, 64)));
    for (int64_t i = 0; i < *count; ++i) {
      value.elements.emplace_back();
      absl::StatusOr<bool> got = Value(value.elements.back(), depth + 1);
      if (!got.ok() || !*got) return got;
    }
    return true;
  }

  std::string_view input_;
  size_t position_ = 0;
};

void AppendBulk(std::string& out, std::string_view arg) {
  absl::StrAppend(&out, "$", arg.size(), "\r\n");
  out.append(arg);
  out.append("\r\n");
}

}  // namespace

std::string_view RespValue::error_code() const {
  if (kind != Kind::kError) return {};
  const std::string_view t = text;
  return t.substr(0, t.find(' '));
}

absl::StatusOr<size_t> ParseResp(std::string_view input, RespValue& value) {
  Parser parser(input);
  absl::StatusOr<bool> got = parser.Value(value, 1);
  if (!got.ok()) return got.status();
  return *got ? parser.position() : 0;
}

void AppendRespCommand(std::string& out, const std::vector<std::string_view>& args) {
  absl::StrAppend(&out, "*", args.size(), "\r\n");
  for (std::string_view arg : args) AppendBulk(out, arg);
}

void AppendRespCommand(std::string& out, std::initializer_list<std::string_view> args) {
  absl::StrAppend(&out, "*", args.size(), "\r\n");
  for (std::string_view arg : args) AppendBulk(out, arg);
}

std::string DescribeResp(const RespValue& value) {
  constexpr size_t kMaxText = 200;
  switch (value.kind) {
    case RespValue::Kind::kSimpleString:
      return absl::StrCat("+", value.text.substr(0, kMaxText));
    case RespValue::Kind::kError:
      return absl::StrCat("-", value.text.substr(0, kMaxText));
    case RespValue::Kind::kInteger:
      return absl::StrCat(":", value.integer);
    case RespValue::Kind::kBulkString:
      return absl::StrCat("\"", absl::CHexEscape(value.text.substr(0, kMaxText)), "\"");
    case RespValue::Kind::kNull:
      return "(nil)";
    case RespValue::Kind::kArray: {
      std::string out = "[";
      for (size_t i = 0; i < value.elements.size() && i < 8; ++i) {
        if (i > 0) out += ", ";
        out += DescribeResp(value.elements[i]);
      }
      if (value.elements.size() > 8) out += ", ...";
      out += "]";
      return out;
    }
  }
  return "?";
}

}  // namespace warmroute::net
