#pragma once

// An HTTP/1.1 request parser for the server: the request line and headers straight into an
// HttpRequest, the body (Content-Length or chunked) into its body string with
// kBodySpareCapacity bytes of room after it. Sans-I/O: the caller feeds it what it read.
//
// Beast's basic_parser did this before; like the upstream client's Http1ResponseParser (which
// shares net/http1/syntax.h with it), this one recognises the few framing headers by length and
// a case-folded compare instead of looking every name up among the ~350 Beast knows. It accepts
// nothing Beast's parser refused (a differential unit test checks that), and refuses more:
// - the request line is `method SP target SP HTTP/1.x`: the method a token, the target visible
//   ASCII; lines end in CRLF; no obsolete line folding;
// - Content-Length: digits only, repeated with the same value; not with Transfer-Encoding;
// - Transfer-Encoding: chunked, as the last coding; any other coding is refused (RFC 9112 6.3:
//   a request body's length must be known);
// - header_limit bounds the request line and headers together (and the trailer section),
//   body_limit the body (a Content-Length over it is refused before any body byte is read).
// keep_alive: HTTP/1.1 unless `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "net/http1/http_request.h"
#include "net/http1/response.h"
#include "net/http1/syntax.h"

namespace warmroute::net {

class Http1RequestParser {
 public:
  enum class Error {
    kNone,
    kBadRequestLine,
    kBadHeader,
    kBadHost,  // an HTTP/1.1 request without a Host header, or one with several (RFC 9112 3.2)
    kHeaderTooLarge,
    kBadContentLength,
    kBadTransferEncoding,
    kUnsupportedTransferCoding,  // a coding besides chunked (gzip, ...): 501
    kBadChunk,
    kBodyTooLarge,
  };

  Http1RequestParser(size_t header_limit, uint64_t body_limit)
      : header_limit_(header_limit), body_limit_(body_limit) {}

  // Starts over for the connection's next request, keeping the memory the last one's `request`
  // took: its strings' and header list's, its body's unless that is over kKeptBodyBytes, and its
  // headers' names and values (up to kKeptHeaders of them, each up to kKeptHeaderBytes), so that
  // a connection's requests of the usual sizes allocate nothing for these, and an idle
  // connection keeps at most about kKeptBodyBytes of body memory. A client sends mostly the same
  // headers in the same order, so the next request's n-th header is written into the memory of
  // the last one's n-th (the memory, not the header: `request.headers` holds only what the new
  // request sent).
  void Reset();
  static constexpr size_t kKeptBodyBytes = 32 * 1024;
  static constexpr size_t kKeptHeaders = 32;
  static constexpr size_t kKeptHeaderBytes = 256;

  // Parses from `in` and returns how many of its bytes it used: the rest must be offered again,
  // with more appended, in the next call. Stops when the request is done (a pipelined next
  // request stays unused), more input is needed, or on an error (set in `error`; the parser is
  // then unusable).
  size_t Put(std::string_view in, Error& error);

  bool head_done() const { return state_ > State::kFields; }
  bool done() const { return state_ == State::kDone; }
  // The head had "Expect: 100-continue".
  bool expects_continue() const { return expects_continue_; }

  // The request; complete once done().
  HttpRequest request;

  static std::string_view Describe(Error error);

  // The answer to a request refused with `error` (not kNone), an OpenAI error body: 413 for a
  // body over the limit, 431 (Request Header Fields Too Large) for a head over it, 501 for a
  // transfer coding other than chunked, else 400 naming what is malformed.
  Response RefusalOf(Error error) const;

 private:
  enum class State { kRequestLine, kFields, kBody, kChunked, kDone };

  Error ParseRequestLine(std::string_view line);
  Error FinishHead();
  void AddHeader(std::string_view name, std::string_view value);

  const size_t header_limit_;
  const uint64_t body_limit_;
  State state_ = State::kRequestLine;
  size_t head_bytes_ = 0;
  uint64_t body_left_ = 0;
  uint64_t chunked_bytes_ = 0;  // decoded so far of a chunked body
  int minor_version_ = 1;
  bool expects_continue_ = false;
  int hosts_ = 0;  // Host header lines seen
  http1::Framing framing_;
  http1::ChunkedDecoder chunked_{header_limit_};
  // The last request's header strings, for this one's to be written into: spare_headers_[i] for
  // the i-th header, from next_spare_ on (the ones before were moved into request.headers).
  HttpHeaders spare_headers_;
  size_t next_spare_ = 0;
};

}  // namespace warmroute::net
