// The upstream client's HTTP/1 response parser (net/http1/response_parser.h) on bytes from an
// engine, fed as the client feeds it: unused bytes offered again with more appended, the body
// decoded into a buffer of a few bytes that is emptied after each call, the connection's close
// reported with PutEof. Properties: the head, body, keep-alive and outcome do not depend on the
// read size or the body buffer's size (the first two input bytes choose them), and no call writes
// past the buffer.
#include <string>

#include "fuzz_target.h"
#include "net/http1/response_parser.h"

namespace {

using warmroute::net::Http1ResponseParser;

struct Outcome {
  std::string head;
  std::string body;
  bool done = false;
  bool keep_alive = false;
  bool failed = false;
  bool operator==(const Outcome&) const = default;
};

Outcome Parse(std::string_view input, size_t read_size, size_t out_size, bool head_request) {
  Http1ResponseParser parser(/*header_limit=*/1024);
  if (head_request) parser.SkipBody();
  Outcome outcome;
  std::string buffer;
  std::string out(out_size + 1, '\x5a');  // the last byte is a guard
  size_t offered = 0;
  while (true) {
    Http1ResponseParser::Error error = Http1ResponseParser::Error::kNone;
    size_t out_used = 0;
    const size_t used = parser.Put(buffer, out.data(), out_size, out_used, error);
    FUZZ_CHECK(used <= buffer.size());
    FUZZ_CHECK(out_used <= out_size);
    FUZZ_CHECK(out[out_size] == '\x5a');
    outcome.body.append(out.data(), out_used);
    if (error != Http1ResponseParser::Error::kNone) {
      outcome.failed = true;
      return outcome;
    }
    buffer.erase(0, used);
    if (parser.done()) break;
    if (used > 0 || out_used > 0) continue;
    if (offered == input.size()) {
      outcome.failed = parser.PutEof() != Http1ResponseParser::Error::kNone;
      break;
    }
    const size_t n = std::min(read_size, input.size() - offered);
    buffer.append(input.substr(offered, n));
    offered += n;
  }
  outcome.done = parser.done();
  if (parser.head_done()) {
    const auto& head = parser.head;
    outcome.head = std::to_string(head.status) + ' ' + head.content_type +
                   (head.chunked ? " chunked\n" : "\n");
    for (const auto& [name, value] : head.headers) outcome.head += name + ": " + value + '\n';
    outcome.keep_alive = parser.keep_alive();
  }
  return outcome;
}

}  // namespace

WARMROUTE_FUZZ_TARGET(http_response) {
  const uint8_t sizes = warmroute::fuzz::TakeByte(data, size);
  const uint8_t choice = warmroute::fuzz::TakeByte(data, size);
  const size_t read_size = 1 + sizes % 32;
  const size_t out_size = 1 + sizes / 32;
  const bool head_request = choice % 8 == 0;
  const std::string_view input = warmroute::fuzz::AsText(data, size);
  const Outcome whole = Parse(input, input.size() + 1, 1 << 16, head_request);
  FUZZ_CHECK(whole == Parse(input, read_size, out_size, head_request));
  return 0;
}
