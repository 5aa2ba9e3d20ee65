#include "net/http1/response_parser.h"

#include <algorithm>
#include <cstring>

namespace warmroute::net {

using namespace std::string_view_literals;
using http1::Framing;

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
  Framing::Error framing = Framing::Error::kNone;
  if (framing_.Read(name, value, framing)) {
    switch (framing) {
      case Framing::Error::kNone:
        return Error::kNone;
      case Framing::Error::kBadConnection:
        return Error::kBadHeader;
      case Framing::Error::kBadContentLength:
        return Error::kBadContentLength;
      case Framing::Error::kBadTransferEncoding:
        return Error::kBadTransferEncoding;
    }
  }
  if (name.size() == 12 && http1::TokenIs(name, "content-type"sv)) {
    head.content_type.assign(value);
  } else if (!IsHopByHopHeader(name)) {
    head.headers.emplace_back(name, value);
  }
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
  if (!http1::AllValueChars(line.substr(13))) return Error::kBadStatusLine;
  head = UpstreamResponseHead();
  head.status = status;
  head.headers.reserve(8);  // one allocation for a typical engine's headers
  minor_version_ = line[7] - '0';
  framing_ = Framing();
  return Error::kNone;
}

Http1ResponseParser::Error Http1ResponseParser::FinishHead() {
  if (framing_.Check() != Framing::Error::kNone) return Error::kBadTransferEncoding;
  const int status = head.status;
  head.chunked = framing_.chunked;
  keep_alive_ = minor_version_ == 1 ? !framing_.close : framing_.keep_alive;
  if (status < 200 && status != 101) {
    state_ = State::kStatusLine;  // an interim response (100 Continue, 103 Early Hints)
  } else if (skip_body_ || status < 200 || status == 204 || status == 304) {
    if (status == 101) keep_alive_ = false;  // not an upgrade this client can follow
    head.chunked = false;
    state_ = State::kDone;
  } else if (head.chunked) {
    state_ = State::kChunked;
  } else if (framing_.has_length) {
    body_left_ = framing_.length;
    state_ = body_left_ == 0 ? State::kDone : State::kBody;
  } else {
    keep_alive_ = false;  // the close ends the body
    state_ = State::kToClose;
  }
  return Error::kNone;
}

size_t Http1ResponseParser::Put(std::string_view in, char* out, size_t out_size, size_t& out_used,
                                Error& error) {
  error = Error::kNone;
  const size_t out_used_before = out_used;
  size_t used = 0;
  for (;;) {
    const std::string_view rest = in.substr(used);
    switch (state_) {
      case State::kStatusLine:
      case State::kFields: {
        // A line at a time, each used once it is whole.
        std::string_view line;
        size_t consumed = 0;
        switch (http1::NextHeadLine(rest, header_limit_, head_bytes_, line, consumed)) {
          case http1::HeadLine::kLine:
            break;
          case http1::HeadLine::kNeedMore:
            return used;
          case http1::HeadLine::kTooLarge:
            error = Error::kHeaderTooLarge;
            return used;
          case http1::HeadLine::kBadEnding:
            error = state_ == State::kStatusLine ? Error::kBadStatusLine : Error::kBadHeader;
            return used;
        }
        const bool status_line = state_ == State::kStatusLine;
        used += consumed;
        if (status_line) {
          if ((error = ParseStatusLine(line)) != Error::kNone) return used;
          state_ = State::kFields;
        } else if (line.empty()) {
          if ((error = FinishHead()) != Error::kNone) return used;
          head_bytes_ = 0;
        } else {
          std::string_view name;
          std::string_view value;
          if (!http1::SplitField(line, name, value)) {
            error = Error::kBadHeader;
            return used;
          }
          if ((error = ParseField(name, value)) != Error::kNone) return used;
        }
        continue;
      }
      case State::kBody: {
        used += http1::TakeBody(rest, body_left_, out, out_size, out_used);
        if (body_left_ > 0) return used;  // out is full or the input is used up
        state_ = State::kDone;
        continue;
      }
      case State::kToClose: {
        uint64_t unbounded = UINT64_MAX;  // up to the close
        return used + http1::TakeBody(rest, unbounded, out, out_size, out_used);
      }
      case State::kChunked: {
        http1::ChunkedDecoder::Status status;
        used += chunked_.Put(rest, out, out_size, out_used, status);
        // Body bytes decoded before an error go first: the bytes in error stay unused, and the
        // next call, offered them again, reports it.
        if (status != http1::ChunkedDecoder::Status::kOk && out_used > out_used_before) {
          return used;
        }
        if (status == http1::ChunkedDecoder::Status::kBadChunk) error = Error::kBadChunk;
        if (status == http1::ChunkedDecoder::Status::kTrailersTooLarge) {
          error = Error::kHeaderTooLarge;
        }
        if (!chunked_.done()) return used;
        state_ = State::kDone;
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
