// The server's HTTP/1 request parser (net/http1/request_parser.h) on bytes from a client, fed as
// the server feeds it: what is unused is offered again with more appended, a finished request is
// followed by Reset and the next (pipelined) one. Property: the requests parsed, and whether the
// connection ended in an error, do not depend on how the bytes were split into reads (the first
// input byte chooses the read size).
#include <string>
#include <vector>

#include "fuzz_target.h"
#include "net/http1/request_parser.h"

namespace {

using warmroute::net::Http1RequestParser;

struct Outcome {
  std::vector<std::string> requests;  // each request flattened
  bool failed = false;
  bool operator==(const Outcome&) const = default;
};

std::string Flatten(const warmroute::net::HttpRequest& r) {
  std::string out = r.method + ' ' + r.target + ' ' + r.path + (r.keep_alive ? " ka" : " close") +
                    (r.http10 ? " 1.0\n" : " 1.1\n");
  for (const auto& [name, value] : r.headers) out += name + ": " + value + '\n';
  return out + '\n' + r.body;
}

Outcome Parse(std::string_view input, size_t read_size) {
  Http1RequestParser parser(/*header_limit=*/1024, /*body_limit=*/4096);
  Outcome outcome;
  std::string buffer;
  size_t offered = 0;
  while (true) {
    Http1RequestParser::Error error = Http1RequestParser::Error::kNone;
    const size_t used = parser.Put(buffer, error);
    FUZZ_CHECK(used <= buffer.size());
    if (error != Http1RequestParser::Error::kNone) {
      FUZZ_CHECK(parser.RefusalOf(error).head.status >= 400);
      outcome.failed = true;
      return outcome;
    }
    buffer.erase(0, used);
    if (parser.done()) {
      outcome.requests.push_back(Flatten(parser.request));
      parser.Reset();
      continue;
    }
    if (offered == input.size()) return outcome;  // the client stopped mid-request
    const size_t n = std::min(read_size, input.size() - offered);
    buffer.append(input.substr(offered, n));
    offered += n;
  }
}

}  // namespace

WARMROUTE_FUZZ_TARGET(http_request) {
  const size_t read_size = 1 + warmroute::fuzz::TakeByte(data, size) % 64;
  const std::string_view input = warmroute::fuzz::AsText(data, size);
  FUZZ_CHECK(Parse(input, input.size() + 1) == Parse(input, read_size));
  return 0;
}
