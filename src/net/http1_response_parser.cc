#include "net/http1_response_parser.h"

#include <algorithm>
#include <cstring>

namespace warmroute::net {
namespace {

using namespace std::string_view_literals;

// Character classes by table: a load per character, where a switch costs a branch cascade.
struct CharClasses {
  bool token[256] = {};  // tchar (RFC 9110 5.6.2)
  bool value[256] = {};  // field-value characters: VCHAR, obs-text, SP and HTAB
  constexpr CharClasses() {
    for (int c = 0; c < 256; ++c) {
      token[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      value[c] = c >= 0x20 ? c != 0x7f : c == '\t';
    }
    for (char c : std::string_view("!#$%&'*+-.^_`|~")) token[static_cast<unsigned char>(c)] = true;
  }
};
constexpr CharClasses kClasses;

bool IsTokenChar(unsigned char c) { return kClasses.token[c]; }
bool IsValueChar(unsigned char c) { return kClasses.value[c]; }

bool IsOws(char c) { return c == ' ' || c == '\t'; }

// Whether every byte of `s` is a field-value character: 8 bytes at a time, then byte by byte only
// in a word that may hold a control character or DEL (e.g. a tab).
bool AllValueChars(std::string_view s) {
  constexpr uint64_t kOnes = 0x0101010101010101;
  constexpr uint64_t kHigh = 0x8080808080808080;
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t x;
    std::memcpy(&x, s.data() + i, 8);
    const uint64_t control = (x - kOnes * 0x20) & ~x & kHigh;  // a byte below 0x20, or none
    const uint64_t y = x ^ (kOnes * 0x7f);
    const uint64_t del = (y - kOnes) & ~y & kHigh;  // a byte 0x7f, or none
    if ((control | del) == 0) continue;
    for (size_t j = i; j < i + 8; ++j) {
      if (!IsValueChar(static_cast<unsigned char>(s[j]))) return false;
    }
  }
  for (; i < s.size(); ++i) {
    if (!IsValueChar(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

// Whether `token` (a checked token) is `lower` in any case; `lower` holds only lowercase letters
// and '-'. A token byte ORed with 0x20 is such a character only when it is that character in
// either case (CR, which 0x20 would fold onto '-', is not a token character), so words compare
// 8 bytes at a time.
bool TokenIs(std::string_view token, std::string_view lower) {
  if (token.size() != lower.size()) return false;
  size_t i = 0;
  for (; i + 8 <= token.size(); i += 8) {
    uint64_t a;
    uint64_t b;
    std::memcpy(&a, token.data() + i, 8);
    std::memcpy(&b, lower.data() + i, 8);
    if ((a | 0x2020202020202020) != b) return false;
  }
  for (; i < token.size(); ++i) {
    if ((token[i] | 0x20) != lower[i]) return false;
  }
  return true;
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && IsOws(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsOws(s.back())) s.remove_suffix(1);
  return s;
}

// The position of the first "\r\n" in `s` at or after `from`, or npos.
size_t FindCrlf(std::string_view s, size_t from) {
  while (from < s.size()) {
    const void* cr = std::memchr(s.data() + from, '\r', s.size() - from);
    if (cr == nullptr) return std::string_view::npos;
    const size_t at = static_cast<size_t>(static_cast<const char*>(cr) - s.data());
    if (at + 1 < s.size() && s[at + 1] == '\n') return at;
    if (at + 1 == s.size()) return std::string_view::npos;  // the '\n' may come next
    from = at + 1;
  }
  return std::string_view::npos;
}

// Decimal digits only, no sign, no overflow.
bool ParseDecimal(std::string_view s, uint64_t& out) {
  if (s.empty()) return false;
  uint64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (n > (UINT64_MAX - digit) / 10) return false;
    n = n * 10 + digit;
  }
  out = n;
  return true;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Calls f(token) for each element of a comma-separated list of tokens (empty elements skipped).
// False when an element is not a token.
template <typename F>
bool ForEachToken(std::string_view list, F f) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view item = TrimOws(list.substr(0, comma));
    for (char c : item) {
      if (!IsTokenChar(static_cast<unsigned char>(c))) return false;
    }
    if (!item.empty()) f(item);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return true;
}

// Splits a header or trailer field line into its name (a token) and its value (without the
// surrounding whitespace; no control character but HTAB). False when the line is not a field.
bool SplitField(std::string_view line, std::string_view& name, std::string_view& value) {
  const void* colon = std::memchr(line.data(), ':', line.size());
  if (colon == nullptr || colon == line.data()) return false;
  const size_t at = static_cast<size_t>(static_cast<const char*>(colon) - line.data());
  name = line.substr(0, at);
  for (char c : name) {
    if (!IsTokenChar(static_cast<unsigned char>(c))) return false;
  }
  value = TrimOws(line.substr(at + 1));
  return AllValueChars(value);
}

// chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] ) (RFC 9112 7.1.1).
bool ValidChunkExtensions(std::string_view s) {
  size_t i = 0;
  const auto skip_ows = [&] {
    while (i < s.size() && IsOws(s[i])) ++i;
  };
  const auto token = [&] {
    const size_t start = i;
    while (i < s.size() && IsTokenChar(static_cast<unsigned char>(s[i]))) ++i;
    return i > start;
  };
  for (;;) {
    if (i == s.size()) return true;
    skip_ows();
    if (i == s.size() || s[i] != ';') return false;
    ++i;
    skip_ows();
    if (!token()) return false;
    const size_t after_name = i;
    skip_ows();
    if (i == s.size() || s[i] != '=') {
      i = after_name;
      continue;
    }
    ++i;
    skip_ows();
    if (i < s.size() && s[i] == '"') {  // quoted-string, with quoted-pairs
      for (++i;; ++i) {
        if (i == s.size()) return false;
        const auto c = static_cast<unsigned char>(s[i]);
        if (c == '"') break;
        if (c == '\\') {
          if (++i == s.size() || !IsValueChar(static_cast<unsigned char>(s[i]))) return false;
        } else if (!IsValueChar(c)) {
          return false;
        }
      }
      ++i;
    } else if (!token()) {
      return false;
    }
  }
}

}  // namespace

std::string_view Http1ResponseParser::Describe(Error error) {
  switch (error) {
    case Error::kNone:
      return "no error";
    case Error::kBadStatusLine:
      return "bad status line";
    case Error::kBadHeader:
      return "bad header field";
    case Error::kHeaderTooLarge:
      return "header section too large";
    case Error::kBadContentLength:
      return "bad Content-Length";
    case Error::kBadTransferEncoding:
      return "bad Transfer-Encoding";
    case Error::kBadChunk:
      return "bad chunk";
    case Error::kPartialMessage:
      return "partial message";
  }
  return "unknown error";
}

Http1ResponseParser::Error Http1ResponseParser::ParseField(std::string_view name,
                                                           std::string_view value) {
  switch (name.size()) {
    case 10:
      if (TokenIs(name, "connection"sv)) {
        const bool tokens = ForEachToken(value, [&](std::string_view token) {
          if (TokenIs(token, "close"sv)) connection_close_ = true;
          if (TokenIs(token, "keep-alive"sv)) connection_keep_alive_ = true;
        });
        return tokens ? Error::kNone : Error::kBadHeader;
      }
      break;
    case 12:
      if (TokenIs(name, "content-type"sv)) {
        head.content_type.assign(value);
        return Error::kNone;
      }
      break;
    case 14:
      if (TokenIs(name, "content-length"sv)) {
        uint64_t n = 0;
        if (!ParseDecimal(value, n) || (has_length_ && n != length_)) {
          return Error::kBadContentLength;
        }
        has_length_ = true;
        length_ = n;
        return Error::kNone;
      }
      break;
    case 17:
      if (TokenIs(name, "transfer-encoding"sv)) {
        // The codings of all Transfer-Encoding fields in order; chunked only as the last one.
        bool after_chunked = false;
        const bool tokens = ForEachToken(value, [&](std::string_view coding) {
          if (head.chunked) after_chunked = true;
          if (TokenIs(coding, "chunked"sv)) head.chunked = true;
        });
        if (!tokens || after_chunked) return Error::kBadTransferEncoding;
        has_transfer_encoding_ = true;
        return Error::kNone;
      }
      break;
    default:
      break;
  }
  if (!IsHopByHopHeader(name)) head.headers.emplace_back(name, value);
  return Error::kNone;
}

Http1ResponseParser::Error Http1ResponseParser::ParseStatusLine(std::string_view line) {
  // HTTP/1.x SP 3DIGIT SP reason (the reason may be empty).
  if (line.size() < 13 || line.substr(0, 7) != "HTTP/1."sv || (line[7] != '0' && line[7] != '1') ||
      line[8] != ' ' || line[12] != ' ') {
    return Error::kBadStatusLine;
  }
  int status = 0;
  for (size_t i = 9; i < 12; ++i) {
    if (line[i] < '0' || line[i] > '9') return Error::kBadStatusLine;
    status = status * 10 + (line[i] - '0');
  }
  if (status < 100) return Error::kBadStatusLine;
  if (!AllValueChars(line.substr(13))) return Error::kBadStatusLine;
  head = UpstreamResponseHead();
  head.status = status;
  head.headers.reserve(8);  // one allocation for a typical engine's headers
  minor_version_ = line[7] - '0';
  has_length_ = false;
  length_ = 0;
  has_transfer_encoding_ = false;
  connection_close_ = false;
  connection_keep_alive_ = false;
  return Error::kNone;
}

Http1ResponseParser::Error Http1ResponseParser::FinishHead() {
  if (has_length_ && has_transfer_encoding_) return Error::kBadTransferEncoding;
  const int status = head.status;
  keep_alive_ = minor_version_ == 1 ? !connection_close_ : connection_keep_alive_;
  if (status < 200 && status != 101) {
    state_ = State::kStatusLine;  // an interim response (100 Continue, 103 Early Hints)
  } else if (skip_body_ || status < 200 || status == 204 || status == 304) {
    if (status == 101) keep_alive_ = false;  // not an upgrade this client can follow
    head.chunked = false;
    state_ = State::kDone;
  } else if (head.chunked) {
    state_ = State::kChunkSize;
  } else if (has_length_) {
    body_left_ = length_;
    state_ = length_ == 0 ? State::kDone : State::kBody;
  } else {
    keep_alive_ = false;  // the close ends the body
    state_ = State::kToClose;
  }
  return Error::kNone;
}

size_t Http1ResponseParser::Put(std::string_view in, char* out, size_t out_size, size_t& out_used,
                                Error& error) {
  error = Error::kNone;
  size_t used = 0;
  for (;;) {
    const std::string_view rest = in.substr(used);
    switch (state_) {
      case State::kStatusLine:
      case State::kFields: {
        // A line at a time, each used once it is whole (LF-terminated; CRLF required).
        const void* lf = std::memchr(rest.data(), '\n', rest.size());
        if (lf == nullptr) {
          if (head_bytes_ + rest.size() > header_limit_) error = Error::kHeaderTooLarge;
          return used;
        }
        const size_t end = static_cast<size_t>(static_cast<const char*>(lf) - rest.data());
        head_bytes_ += end + 1;
        if (head_bytes_ > header_limit_) {
          error = Error::kHeaderTooLarge;
          return used;
        }
        const bool status_line = state_ == State::kStatusLine;
        if (end == 0 || rest[end - 1] != '\r') {
          error = status_line ? Error::kBadStatusLine : Error::kBadHeader;
          return used;
        }
        const std::string_view line = rest.substr(0, end - 1);
        used += end + 1;
        if (status_line) {
          if ((error = ParseStatusLine(line)) != Error::kNone) return used;
          state_ = State::kFields;
        } else if (line.empty()) {
          if ((error = FinishHead()) != Error::kNone) return used;
          head_bytes_ = 0;
        } else {
          std::string_view name;
          std::string_view value;
          if (!SplitField(line, name, value)) {
            error = Error::kBadHeader;
            return used;
          }
          if ((error = ParseField(name, value)) != Error::kNone) return used;
        }
        continue;
      }
      case State::kBody:
      case State::kChunkData: {
        const size_t room = out_size - out_used;
        const size_t n =
            static_cast<size_t>(std::min<uint64_t>(body_left_, std::min(room, rest.size())));
        if (n > 0) {
          std::memcpy(out + out_used, rest.data(), n);
          out_used += n;
          used += n;
          body_left_ -= n;
        }
        if (body_left_ == 0) {
          state_ = state_ == State::kBody ? State::kDone : State::kChunkCrlf;
          continue;
        }
        return used;  // out is full or the input is used up
      }
      case State::kToClose: {
        const size_t n = std::min(out_size - out_used, rest.size());
        if (n > 0) std::memcpy(out + out_used, rest.data(), n);
        out_used += n;
        used += n;
        return used;
      }
      case State::kChunkSize: {
        // chunk-size [ BWS ";" chunk-ext ] CRLF
        const size_t end = FindCrlf(rest, 0);
        if (end == std::string_view::npos) {
          if (rest.size() > header_limit_) error = Error::kBadChunk;
          return used;
        }
        const std::string_view line = rest.substr(0, end);
        uint64_t size = 0;
        size_t i = 0;
        for (; i < line.size() && HexValue(line[i]) >= 0; ++i) {
          if (size >> 60 != 0) {
            error = Error::kBadChunk;
            return used;
          }
          size = size * 16 + static_cast<uint64_t>(HexValue(line[i]));
        }
        if (i == 0) {
          error = Error::kBadChunk;
          return used;
        }
        if (!ValidChunkExtensions(line.substr(i))) {
          error = Error::kBadChunk;
          return used;
        }
        used += end + 2;
        body_left_ = size;
        trailer_bytes_ = 0;
        state_ = size == 0 ? State::kTrailers : State::kChunkData;
        continue;
      }
      case State::kChunkCrlf: {
        if (rest.size() < 2) return used;
        if (rest[0] != '\r' || rest[1] != '\n') {
          error = Error::kBadChunk;
          return used;
        }
        used += 2;
        state_ = State::kChunkSize;
        continue;
      }
      case State::kTrailers: {
        const size_t end = FindCrlf(rest, 0);
        if (end == std::string_view::npos) {
          if (trailer_bytes_ + rest.size() > header_limit_) error = Error::kHeaderTooLarge;
          return used;
        }
        trailer_bytes_ += end + 2;
        if (trailer_bytes_ > header_limit_) {
          error = Error::kHeaderTooLarge;
          return used;
        }
        const std::string_view field = rest.substr(0, end);
        used += end + 2;
        if (field.empty()) {
          state_ = State::kDone;
          continue;
        }
        std::string_view name;
        std::string_view value;
        if (!SplitField(field, name, value)) {
          error = Error::kBadChunk;
          return used;
        }
        continue;
      }
      case State::kDone:
        return used;
    }
  }
}

Http1ResponseParser::Error Http1ResponseParser::PutEof() {
  if (state_ == State::kToClose) {
    state_ = State::kDone;
    return Error::kNone;
  }
  return state_ == State::kDone ? Error::kNone : Error::kPartialMessage;
}

}  // namespace warmroute::net
