#include "net/http1/syntax.h"

#include <algorithm>
#include <cstring>

namespace warmroute::net::http1 {
namespace {

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

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
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

// 8 bytes at a time, then byte by byte only in a word that may hold a control character or DEL
// (e.g. a tab).
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

// A token byte ORed with 0x20 is a lowercase letter or '-' only when it is that character in
// either case (CR, which 0x20 would fold onto '-', is not a token character), so words compare 8
// bytes at a time.
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

HeadLine NextHeadLine(std::string_view rest, size_t limit, size_t& head_bytes,
                      std::string_view& line, size_t& consumed) {
  const void* lf = std::memchr(rest.data(), '\n', rest.size());
  if (lf == nullptr) {
    return head_bytes + rest.size() > limit ? HeadLine::kTooLarge : HeadLine::kNeedMore;
  }
  const size_t end = static_cast<size_t>(static_cast<const char*>(lf) - rest.data());
  head_bytes += end + 1;
  if (head_bytes > limit) return HeadLine::kTooLarge;
  if (end == 0 || rest[end - 1] != '\r') return HeadLine::kBadEnding;
  line = rest.substr(0, end - 1);
  consumed = end + 1;
  return HeadLine::kLine;
}

size_t TakeBody(std::string_view in, uint64_t& left, char* out, size_t out_size, size_t& out_used) {
  const size_t n =
      static_cast<size_t>(std::min<uint64_t>(left, std::min(out_size - out_used, in.size())));
  if (n > 0) std::memcpy(out + out_used, in.data(), n);
  out_used += n;
  left -= n;
  return n;
}

bool Framing::Read(std::string_view name, std::string_view value, Error& error) {
  using namespace std::string_view_literals;
  error = Error::kNone;
  switch (name.size()) {
    case 10:
      if (TokenIs(name, "connection"sv)) {
        const bool tokens = ForEachToken(value, [&](std::string_view token) {
          if (TokenIs(token, "close"sv)) close = true;
          if (TokenIs(token, "keep-alive"sv)) keep_alive = true;
        });
        if (!tokens) error = Error::kBadConnection;
        return true;
      }
      return false;
    case 14:
      if (TokenIs(name, "content-length"sv)) {
        uint64_t n = 0;
        if (!ParseDecimal(value, n) || (has_length && n != length)) {
          error = Error::kBadContentLength;
        } else {
          has_length = true;
          length = n;
        }
        return true;
      }
      return false;
    case 17:
      if (TokenIs(name, "transfer-encoding"sv)) {
        // The codings of all Transfer-Encoding fields in order; chunked only as the last one.
        bool after_chunked = false;
        const bool tokens = ForEachToken(value, [&](std::string_view coding) {
          if (chunked) after_chunked = true;
          if (TokenIs(coding, "chunked"sv)) chunked = true;
          ++codings;
        });
        if (!tokens || after_chunked) error = Error::kBadTransferEncoding;
        has_transfer_encoding = true;
        return true;
      }
      return false;
    default:
      return false;
  }
}

size_t ChunkedDecoder::Put(std::string_view in, char* out, size_t out_size, size_t& out_used,
                           Status& status) {
  status = Status::kOk;
  size_t used = 0;
  for (;;) {
    const std::string_view rest = in.substr(used);
    switch (state_) {
      case State::kSize: {
        // chunk-size [ BWS ";" chunk-ext ] CRLF
        const size_t end = FindCrlf(rest, 0);
        if (end == std::string_view::npos) {
          if (rest.size() > line_limit_) status = Status::kBadChunk;
          return used;
        }
        const std::string_view line = rest.substr(0, end);
        uint64_t size = 0;
        size_t i = 0;
        for (; i < line.size() && HexValue(line[i]) >= 0; ++i) {
          if (size >> 60 != 0) {
            status = Status::kBadChunk;
            return used;
          }
          size = size * 16 + static_cast<uint64_t>(HexValue(line[i]));
        }
        if (i == 0 || !ValidChunkExtensions(line.substr(i))) {
          status = Status::kBadChunk;
          return used;
        }
        used += end + 2;
        data_left_ = size;
        trailer_bytes_ = 0;
        state_ = size == 0 ? State::kTrailers : State::kData;
        continue;
      }
      case State::kData: {
        used += TakeBody(rest, data_left_, out, out_size, out_used);
        if (data_left_ > 0) return used;  // out is full or the input is used up
        state_ = State::kDataCrlf;
        continue;
      }
      case State::kDataCrlf: {
        if (rest.size() < 2) return used;
        if (rest[0] != '\r' || rest[1] != '\n') {
          status = Status::kBadChunk;
          return used;
        }
        used += 2;
        state_ = State::kSize;
        continue;
      }
      case State::kTrailers: {
        const size_t end = FindCrlf(rest, 0);
        if (end == std::string_view::npos) {
          if (trailer_bytes_ + rest.size() > line_limit_) status = Status::kTrailersTooLarge;
          return used;
        }
        trailer_bytes_ += end + 2;
        if (trailer_bytes_ > line_limit_) {
          status = Status::kTrailersTooLarge;
          return used;
        }
        const std::string_view field = rest.substr(0, end);
        std::string_view name;
        std::string_view value;
        if (!field.empty() && !SplitField(field, name, value)) {
          status = Status::kBadChunk;
          return used;
        }
        used += end + 2;
        if (field.empty()) state_ = State::kDone;
        continue;
      }
      case State::kDone:
        return used;
    }
  }
}

}  // namespace warmroute::net::http1
