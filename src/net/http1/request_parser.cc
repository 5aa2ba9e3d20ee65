#include "net/http1/request_parser.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"

namespace warmroute::net {

using namespace std::string_view_literals;
using http1::Framing;

std::string_view Http1RequestParser::Describe(Error error) {
  switch (error) {
    case Error::kNone:
      return "no error";
    case Error::kBadRequestLine:
      return "bad request line";
    case Error::kBadHeader:
      return "bad header field";
    case Error::kBadHost:
      return "an HTTP/1.1 request needs exactly one Host header";
    case Error::kHeaderTooLarge:
      return "header section too large";
    case Error::kBadContentLength:
      return "bad Content-Length";
    case Error::kBadTransferEncoding:
      return "bad Transfer-Encoding";
    case Error::kUnsupportedTransferCoding:
      return "a transfer coding other than chunked";
    case Error::kBadChunk:
      return "bad chunk";
    case Error::kBodyTooLarge:
      return "body too large";
  }
  return "unknown error";
}

Response Http1RequestParser::RefusalOf(Error error) const {
  switch (error) {
    case Error::kBodyTooLarge:
      return ErrorResponse(absl::OutOfRangeError(
          absl::StrCat("request body exceeds the limit of ", body_limit_, " bytes")));
    case Error::kHeaderTooLarge:
      // OutOfRange like a body, but 431: 413 is for bodies.
      return ErrorResponse(absl::OutOfRangeError(absl::StrCat(
                               "request header exceeds the limit of ", header_limit_, " bytes")),
                           431);
    case Error::kUnsupportedTransferCoding:
      return ErrorResponse(absl::UnimplementedError(
          "the request's Transfer-Encoding has a coding other than chunked, which is not "
          "supported"));
    default:
      return ErrorResponse(absl::InvalidArgumentError(
          absl::StrCat("malformed HTTP request: ", AbslView(Describe(error)))));
  }
}

namespace {

// Whether `text` starts with `prefix` (lower case), ignoring ASCII case.
bool StartsWithNoCase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    const char c = text[i] >= 'A' && text[i] <= 'Z' ? static_cast<char>(text[i] + 32) : text[i];
    if (c != prefix[i]) return false;
  }
  return true;
}

// Sets request.target to the origin form (path and query) of `target`, and request.path. A
// server must accept the absolute form too (RFC 9112 3.2.2): "http://host/v1/models?x" is
// "/v1/models?x", "http://host" is "/".
void AssignTarget(std::string_view target, HttpRequest& request) {
  request.target.clear();
  const size_t scheme = StartsWithNoCase(target, "http://"sv)    ? 7
                        : StartsWithNoCase(target, "https://"sv) ? 8
                                                                 : 0;
  if (scheme > 0) {
    const size_t path = target.find_first_of("/?", scheme);
    target = path == std::string_view::npos ? std::string_view() : target.substr(path);
    if (target.empty() || target.front() == '?') request.target.push_back('/');
  }
  request.target.append(target);
  request.path.assign(request.target, 0, request.target.find('?'));
}

}  // namespace

Http1RequestParser::Error Http1RequestParser::ParseRequestLine(std::string_view line) {
  // method SP request-target SP HTTP/1.x
  const size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0) return Error::kBadRequestLine;
  const std::string_view method = line.substr(0, sp1);
  if (!http1::IsToken(method)) return Error::kBadRequestLine;
  const size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp2 == sp1 + 1) return Error::kBadRequestLine;
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  for (char c : target) {
    if (c <= ' ' || c == 0x7f || static_cast<unsigned char>(c) >= 0x80) {
      return Error::kBadRequestLine;
    }
  }
  const std::string_view version = line.substr(sp2 + 1);
  if (version.size() != 8 || version.substr(0, 7) != "HTTP/1."sv ||
      (version[7] != '0' && version[7] != '1')) {
    return Error::kBadRequestLine;
  }
  minor_version_ = version[7] - '0';
  request.method.assign(method);
  AssignTarget(target, request);
  request.headers.reserve(8);  // one allocation for a typical client's headers
  return Error::kNone;
}

void Http1RequestParser::Reset() {
  chunked_bytes_ = 0;
  request.method.clear();
  request.target.clear();
  request.path.clear();
  // The request's headers, then the spares it did not use, become the next request's spares.
  for (size_t i = next_spare_; i < spare_headers_.size(); ++i) {
    request.headers.push_back(std::move(spare_headers_[i]));
  }
  spare_headers_.clear();
  spare_headers_.swap(request.headers);
  next_spare_ = 0;
  if (spare_headers_.size() > kKeptHeaders) spare_headers_.resize(kKeptHeaders);
  for (auto& [name, value] : spare_headers_) {
    // (assigning an empty string would keep the memory)
    if (name.capacity() > kKeptHeaderBytes) std::string().swap(name);
    if (value.capacity() > kKeptHeaderBytes) std::string().swap(value);
  }
  if (request.body.capacity() > kKeptBodyBytes) {
    std::string().swap(request.body);  // (assigning an empty string would keep the memory)
  } else {
    request.body.clear();
  }
  request.keep_alive = true;
  request.http10 = false;
  state_ = State::kRequestLine;
  head_bytes_ = 0;
  body_left_ = 0;
  minor_version_ = 1;
  expects_continue_ = false;
  hosts_ = 0;
  framing_ = http1::Framing();
  chunked_ = http1::ChunkedDecoder(header_limit_);
}

void Http1RequestParser::AddHeader(std::string_view name, std::string_view value) {
  if (next_spare_ == spare_headers_.size()) {
    request.headers.emplace_back(name, value);
    return;
  }
  std::pair<std::string, std::string>& spare = spare_headers_[next_spare_++];
  spare.first.assign(name);
  spare.second.assign(value);
  request.headers.push_back(std::move(spare));
}

Http1RequestParser::Error Http1RequestParser::FinishHead() {
  if (framing_.Check() != Framing::Error::kNone) return Error::kBadTransferEncoding;
  // RFC 9112 3.2: a server MUST answer 400 to an HTTP/1.1 request without a Host header, and to
  // any with more than one (HTTP/1.0 clients may leave it out).
  if (hosts_ > 1 || (hosts_ == 0 && minor_version_ == 1)) return Error::kBadHost;
  request.keep_alive = minor_version_ == 1 ? !framing_.close : framing_.keep_alive;
  request.http10 = minor_version_ == 0;
  if (framing_.has_transfer_encoding) {
    // A request body must have a known length: chunked last, or the request is refused.
    if (!framing_.chunked) return Error::kBadTransferEncoding;
    // Only chunked is decoded: a body with another coding (gzip, chunked) would reach the
    // handler still encoded.
    if (framing_.codings > 1) return Error::kUnsupportedTransferCoding;
    state_ = State::kChunked;
  } else if (framing_.has_length && framing_.length > 0) {
    if (framing_.length > body_limit_) return Error::kBodyTooLarge;
    body_left_ = framing_.length;
    request.body.reserve(static_cast<size_t>(framing_.length) + kBodySpareCapacity);
    state_ = State::kBody;
  } else {
    state_ = State::kDone;
  }
  return Error::kNone;
}

size_t Http1RequestParser::Put(std::string_view in, Error& error) {
  error = Error::kNone;
  size_t used = 0;
  for (;;) {
    const std::string_view rest = in.substr(used);
    switch (state_) {
      case State::kRequestLine:
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
            error = state_ == State::kRequestLine ? Error::kBadRequestLine : Error::kBadHeader;
            return used;
        }
        const bool request_line = state_ == State::kRequestLine;
        used += consumed;
        if (request_line) {
          if ((error = ParseRequestLine(line)) != Error::kNone) return used;
          state_ = State::kFields;
          continue;
        }
        if (line.empty()) {
          if ((error = FinishHead()) != Error::kNone) return used;
          continue;
        }
        std::string_view name;
        std::string_view value;
        if (!http1::SplitField(line, name, value)) {
          error = Error::kBadHeader;
          return used;
        }
        Framing::Error framing = Framing::Error::kNone;
        if (framing_.Read(name, value, framing)) {
          if (framing == Framing::Error::kBadContentLength) error = Error::kBadContentLength;
          if (framing == Framing::Error::kBadTransferEncoding) {
            error = Error::kBadTransferEncoding;
          }
          if (framing == Framing::Error::kBadConnection) error = Error::kBadHeader;
          if (error != Error::kNone) return used;
        } else if (name.size() == 6 && http1::TokenIs(name, "expect"sv) &&
                   HeaderNameIs(value, "100-continue"sv)) {
          expects_continue_ = true;
        } else if (name.size() == 4 && http1::TokenIs(name, "host"sv)) {
          ++hosts_;
        }
        AddHeader(name, value);
        continue;
      }
      case State::kBody: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(body_left_, rest.size()));
        request.body.append(rest.data(), n);
        used += n;
        body_left_ -= n;
        if (body_left_ > 0) return used;
        state_ = State::kDone;
        continue;
      }
      case State::kChunked: {
        // Room for what `rest` may hold, then what the decoder wrote is kept.
        const size_t before = request.body.size();
        request.body.resize(before + rest.size());
        size_t written = 0;
        http1::ChunkedDecoder::Status status;
        used += chunked_.Put(rest, request.body.data() + before, rest.size(), written, status);
        request.body.resize(before + written);
        chunked_bytes_ += written;  // the body may be taken as it comes (a streamed body)
        if (status == http1::ChunkedDecoder::Status::kBadChunk) error = Error::kBadChunk;
        if (status == http1::ChunkedDecoder::Status::kTrailersTooLarge) {
          error = Error::kHeaderTooLarge;
        }
        if (error == Error::kNone && chunked_bytes_ > body_limit_) {
          error = Error::kBodyTooLarge;
        }
        if (error != Error::kNone || !chunked_.done()) return used;
        // The body grew as it came: leave the spare room HttpRequest promises.
        if (!request.body.empty() &&
            request.body.capacity() - request.body.size() < kBodySpareCapacity) {
          request.body.reserve(request.body.size() + kBodySpareCapacity);
        }
        state_ = State::kDone;
        continue;
      }
      case State::kDone:
        return used;
    }
  }
}

}  // namespace warmroute::net
