#pragma once

// An HTTP/1.1 response parser for the upstream client: the status line and headers straight
// into an UpstreamResponseHead, the body (Content-Length, chunked, or up to the connection's
// close) into the caller's buffer. Sans-I/O: the caller feeds it what it read.
//
// Why not Beast's basic_parser: that one looks every header name up among the ~350 it knows and
// validates it byte by byte through tables, which was about a tenth of the gateway's
// instructions per proxied request. An upstream response needs far less: the few framing
// headers (Content-Length, Transfer-Encoding, Connection) and Content-Type are recognised by
// length and a case-insensitive compare; every other header is checked and kept as it is.
//
// What it accepts (RFC 9112; never more than Beast's parser accepted, and stricter where an
// engine never needs the leniency):
// - the status line `HTTP/1.x SSS reason`, the reason possibly empty; lines end in CRLF; no
//   obsolete line folding; header names are tokens, values hold no control character but HTAB
//   and lose their surrounding spaces and tabs;
// - Content-Length: digits only; repeated, the values must agree; not together with
//   Transfer-Encoding (a response that has both is refused, as a request smuggling guard);
// - Transfer-Encoding: chunked must be the last coding, and is then decoded (chunk extensions
//   are read and dropped, trailer fields checked and dropped); without chunked the body runs to
//   the close;
// - no body for 1xx, 204 and 304 and after SkipBody (a HEAD request). Interim 1xx responses
//   (all but 101) are skipped: the head reported is the final one;
// - keep_alive(): HTTP/1.1 unless `Connection: close`, HTTP/1.0 only with
//   `Connection: keep-alive`, and never for a body that runs to the close.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "net/http1/response_writer.h"
#include "net/http1/syntax.h"

namespace warmroute::net {

struct UpstreamResponseHead {
  int status = 0;
  std::string content_type;
  HttpHeaders headers;  // end-to-end headers only (no hop-by-hop, Content-Length, TE)
  bool chunked = false;
};

class Http1ResponseParser {
 public:
  enum class Error {
    kNone,
    kBadStatusLine,
    kBadHeader,
    kHeaderTooLarge,
    kBadContentLength,
    kBadTransferEncoding,
    kBadChunk,
    kPartialMessage,  // the connection closed before the message ended
  };

  // `header_limit`: the most bytes the head (and, for a chunked body, the trailer section) may
  // take.
  explicit Http1ResponseParser(size_t header_limit = 8192) : header_limit_(header_limit) {}

  // The response to a HEAD request: no body whatever the headers say. Before the head is parsed.
  void SkipBody() { skip_body_ = true; }

  // Parses from `in` and returns how many of its bytes it used: the rest must be offered again,
  // with more appended, in the next call. Parses the head once it is whole, then body bytes into
  // out[out_used, out_size), advancing out_used; stops when the message is done, `out` is full,
  // more input is needed, or on an error (set in `error`; the parser is then unusable). Body
  // bytes decoded before a bad chunk are not lost: that call stops before the bad bytes without
  // an error, and the next one, offered them again, reports it.
  size_t Put(std::string_view in, char* out, size_t out_size, size_t& out_used, Error& error);

  // The connection closed with nothing more to parse. Completes a body that runs to the close;
  // any other unfinished message is kPartialMessage.
  Error PutEof();

  bool head_done() const { return state_ > State::kFields; }
  bool done() const { return state_ == State::kDone; }
  bool keep_alive() const { return keep_alive_; }

  // The head; filled once head_done().
  UpstreamResponseHead head;

  static std::string_view Describe(Error error);

 private:
  enum class State {
    kStatusLine,
    kFields,
    kBody,     // Content-Length: body_left_ bytes to go
    kToClose,  // the body runs to the connection's close
    kChunked,  // chunked_ decodes it
    kDone,
  };

  // The head, a line at a time (without its CRLF); FinishHead at its empty line.
  Error ParseStatusLine(std::string_view line);
  Error ParseField(std::string_view name, std::string_view value);
  Error FinishHead();

  const size_t header_limit_;
  State state_ = State::kStatusLine;
  bool skip_body_ = false;
  bool keep_alive_ = false;
  int minor_version_ = 1;
  size_t head_bytes_ = 0;  // of the head so far
  uint64_t body_left_ = 0;
  http1::Framing framing_;  // of the head being parsed
  http1::ChunkedDecoder chunked_{header_limit_};
};

}  // namespace warmroute::net
