#pragma once

// HTTP/1.1 syntax shared by the request parser (the server) and the response parser (the
// upstream client), RFC 9110 and 9112: character classes, field lines, token lists, the framing
// fields of a head, and the chunked transfer coding.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace warmroute::net::http1 {

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
inline constexpr CharClasses kClasses;

inline bool IsTokenChar(unsigned char c) { return kClasses.token[c]; }
inline bool IsValueChar(unsigned char c) { return kClasses.value[c]; }
inline bool IsOws(char c) { return c == ' ' || c == '\t'; }

inline std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && IsOws(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsOws(s.back())) s.remove_suffix(1);
  return s;
}

inline bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTokenChar(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Whether every byte of `s` is a field-value character.
bool AllValueChars(std::string_view s);

// Whether `token` (a checked token) is `lower` in any case; `lower` holds only lowercase letters
// and '-'.
bool TokenIs(std::string_view token, std::string_view lower);

// Decimal digits only, no sign, no overflow.
bool ParseDecimal(std::string_view s, uint64_t& out);

// Splits a header or trailer field line (without its CRLF) into its name (a token) and its value
// (without the surrounding whitespace; no control character but HTAB). False when the line is not
// a field (obsolete line folding is not one).
bool SplitField(std::string_view line, std::string_view& name, std::string_view& value);

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

// The next line of a head, taken only once it is whole: `rest` starts at the line. kLine sets
// `line` (without its CRLF) and `consumed` (with it); every line counts into `head_bytes`, which
// may not exceed `limit`. Lines end in CRLF: a bare LF is kBadEnding.
enum class HeadLine { kLine, kNeedMore, kTooLarge, kBadEnding };
HeadLine NextHeadLine(std::string_view rest, size_t limit, size_t& head_bytes,
                      std::string_view& line, size_t& consumed);

// Copies body bytes from the front of `in` into out[out_used, out_size): as many as are there, fit
// and are still due (`left`, decreased). Returns how many.
size_t TakeBody(std::string_view in, uint64_t& left, char* out, size_t out_size, size_t& out_used);

// The framing fields of a head, read field by field: Connection, Content-Length and
// Transfer-Encoding.
struct Framing {
  enum class Error { kNone, kBadConnection, kBadContentLength, kBadTransferEncoding };

  bool has_length = false;
  uint64_t length = 0;
  bool has_transfer_encoding = false;
  bool chunked = false;     // chunked is the last transfer coding
  int codings = 0;          // transfer codings listed (chunked included)
  bool close = false;       // Connection: close
  bool keep_alive = false;  // Connection: keep-alive

  // When `name` is a framing field, reads `value` and returns true (a malformed value sets
  // `error`): Content-Length digits only, repeated with the same value; Transfer-Encoding
  // tokens, chunked only as the last one; Connection tokens.
  bool Read(std::string_view name, std::string_view value, Error& error);
  // Once the head is read: Content-Length together with Transfer-Encoding is refused (a request
  // smuggling guard, RFC 9112 6.3).
  Error Check() const {
    return has_length && has_transfer_encoding ? Error::kBadTransferEncoding : Error::kNone;
  }
};

// Decodes a chunked body (RFC 9112 7.1): chunk-size lines (extensions checked and dropped), the
// data, the CRLF after it, the last chunk and the trailer section (fields checked and dropped).
class ChunkedDecoder {
 public:
  enum class Status { kOk, kBadChunk, kTrailersTooLarge };

  // `line_limit`: the most bytes a chunk-size line and the trailer section may take.
  explicit ChunkedDecoder(size_t line_limit) : line_limit_(line_limit) {}

  // Decodes from `in` and returns how many of its bytes it used (the rest must be offered again
  // with more appended). Chunk data goes to out[out_used, out_size), advancing out_used. Stops
  // when the body is done, `out` is full, more input is needed, or on an error (`status`). The
  // bytes in error are not used: offered again, they give the same error.
  size_t Put(std::string_view in, char* out, size_t out_size, size_t& out_used, Status& status);

  bool done() const { return state_ == State::kDone; }

 private:
  enum class State { kSize, kData, kDataCrlf, kTrailers, kDone };
  size_t line_limit_;  // not const: a decoder is reset by assigning a new one
  State state_ = State::kSize;
  uint64_t data_left_ = 0;
  size_t trailer_bytes_ = 0;
};

}  // namespace warmroute::net::http1
