#include "net/http1/request_parser.h"

#include <gtest/gtest.h>

#include <boost/beast/http.hpp>
#include <random>
#include <string>
#include <vector>

namespace warmroute::net {
namespace {

namespace http = boost::beast::http;
using Error = Http1RequestParser::Error;

constexpr size_t kHeaderLimit = 8192;
constexpr uint64_t kBodyLimit = 1 << 20;

struct Parsed {
  Error error = Error::kNone;
  bool done = false;
  bool expects_continue = false;
  HttpRequest request;
  size_t left_over = 0;  // bytes after the request (a pipelined one)
};

// Feeds `wire` to `parser` as the server does: in pieces of `step` bytes (the last one shorter),
// the unconsumed rest offered again with the next piece. The result has a copy of the request.
Parsed ParseWith(Http1RequestParser& parser, std::string_view wire, size_t step) {
  Parsed result;
  std::string buffer;
  size_t fed = 0;
  while (!parser.done() && fed < wire.size()) {
    const size_t n = std::min(step, wire.size() - fed);
    buffer.append(wire.substr(fed, n));
    fed += n;
    buffer.erase(0, parser.Put(buffer, result.error));
    if (result.error != Error::kNone) {
      result.request = parser.request;
      return result;
    }
  }
  result.done = parser.done();
  result.expects_continue = parser.expects_continue();
  result.left_over = buffer.size() + (wire.size() - fed);
  result.request = parser.request;
  return result;
}

// The same with a new parser, whose request is moved into the result (as it is, spare capacity
// included).
Parsed Parse(std::string_view wire, size_t step = SIZE_MAX, uint64_t body_limit = kBodyLimit) {
  Http1RequestParser parser(kHeaderLimit, body_limit);
  Parsed result = ParseWith(parser, wire, step);
  result.request = std::move(parser.request);
  return result;
}

TEST(Http1RequestParserTest, ContentLengthRequestIntoHttpRequest) {
  const std::string wire =
      "POST /v1/chat/completions?x=1 HTTP/1.1\r\n"
      "Host: gw\r\n"
      "Content-Type: application/json\r\n"
      "Content-Length: 11\r\n"
      "X-Tenant:  acme \t\r\n"
      "\r\n"
      "{\"ok\":true}"
      "GET /health HTTP/1.1\r\nHost: h\r\n\r\n";
  for (size_t step : {size_t{1}, size_t{5}, SIZE_MAX}) {
    const Parsed p = Parse(wire, step);
    ASSERT_EQ(p.error, Error::kNone);
    EXPECT_TRUE(p.done);
    EXPECT_EQ(p.request.method, "POST");
    EXPECT_EQ(p.request.target, "/v1/chat/completions?x=1");
    EXPECT_EQ(p.request.path, "/v1/chat/completions");
    EXPECT_TRUE(p.request.keep_alive);
    const HttpHeaders expected = {{"Host", "gw"},
                                  {"Content-Type", "application/json"},
                                  {"Content-Length", "11"},
                                  {"X-Tenant", "acme"}};
    EXPECT_EQ(p.request.headers, expected);
    EXPECT_EQ(p.request.body, "{\"ok\":true}");
    // Room after the body for a parser that reads past its end (HttpRequest's contract).
    EXPECT_GE(p.request.body.capacity() - p.request.body.size(), kBodySpareCapacity);
    if (step == SIZE_MAX) {
      EXPECT_EQ(p.left_over, 33u);  // the pipelined GET is not consumed
    }
  }
}

TEST(Http1RequestParserTest, ChunkedBodyExpectContinueAndKeepAlive) {
  const std::string wire =
      "POST /v1/completions HTTP/1.1\r\nHost: h\r\n"
      "Transfer-Encoding: chunked\r\n"
      "Expect: 100-Continue\r\n"
      "\r\n"
      "5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: t\r\n\r\n";
  for (size_t step : {size_t{1}, size_t{3}, SIZE_MAX}) {
    const Parsed p = Parse(wire, step);
    ASSERT_EQ(p.error, Error::kNone);
    EXPECT_TRUE(p.done);
    EXPECT_TRUE(p.expects_continue);
    EXPECT_EQ(p.request.body, "hello world");
    EXPECT_GE(p.request.body.capacity() - p.request.body.size(), kBodySpareCapacity);
  }
  EXPECT_FALSE(Parse("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n").request.keep_alive);
  EXPECT_FALSE(Parse("GET / HTTP/1.0\r\n\r\n").request.keep_alive);
  EXPECT_TRUE(Parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").request.keep_alive);
  const Parsed get = Parse("GET /v1/models HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_TRUE(get.done);
  EXPECT_TRUE(get.request.body.empty());
}

TEST(Http1RequestParserTest, LimitsAndMalformedRequestsAreRefused) {
  const std::vector<std::pair<std::string, Error>> cases = {
      {"POST\r\n\r\n", Error::kBadRequestLine},
      {"POST /x\r\n\r\n", Error::kBadRequestLine},
      {"POST /x HTTP/2.0\r\n\r\n", Error::kBadRequestLine},
      {"POST  /x HTTP/1.1\r\nHost: h\r\n\r\n", Error::kBadRequestLine},
      {"PO(ST /x HTTP/1.1\r\nHost: h\r\n\r\n", Error::kBadRequestLine},
      {"POST /a\x01 HTTP/1.1\r\nHost: h\r\n\r\n", Error::kBadRequestLine},
      {"POST /x HTTP/1.1\n\n", Error::kBadRequestLine},
      {"POST /x HTTP/1.1\r\nHost: h\r\nA b: c\r\n\r\n", Error::kBadHeader},
      {"POST /x HTTP/1.1\r\nHost: h\r\nA: b\r\n c\r\n\r\n", Error::kBadHeader},
      {"POST /x HTTP/1.1\r\nHost: h\r\nA: b\x7f\r\n\r\n", Error::kBadHeader},
      {"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 1, 1\r\n\r\n", Error::kBadContentLength},
      {"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
       Error::kBadContentLength},
      {"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
       Error::kBadTransferEncoding},
      {"POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n",
       Error::kBadTransferEncoding},
      {"POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nq\r\n", Error::kBadChunk},
      {"POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
       Error::kBadChunk},
      {"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 2000000\r\n\r\n", Error::kBodyTooLarge},
      {"POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n100001\r\n" +
           std::string((1 << 20) + 1, 'a'),
       Error::kBodyTooLarge},
      {"POST /x HTTP/1.1\r\nHost: h\r\nX: " + std::string(9000, 'a') + "\r\n\r\n",
       Error::kHeaderTooLarge},
      {"POST /x HTTP/1.1\r\nHost: h\r\nX: " + std::string(9000, 'a'), Error::kHeaderTooLarge},
  };
  for (const auto& [wire, error] : cases) {
    for (size_t step : {size_t{7}, SIZE_MAX}) {
      EXPECT_EQ(Parse(wire, step).error, error)
          << Http1RequestParser::Describe(Parse(wire, step).error) << " for step " << step << ": "
          << wire.substr(0, 100);
    }
  }
  // An incomplete request is not an error: more may come (the server's timeouts bound that).
  const Parsed partial = Parse("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nab");
  EXPECT_EQ(partial.error, Error::kNone);
  EXPECT_FALSE(partial.done);
}

// Beast's request parser as the reference: what it makes of `wire` (the whole request).
struct BeastResult {
  bool ok = false;
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> fields;
  std::string body;
  bool keep_alive = false;
};

BeastResult ParseWithBeast(std::string_view wire) {
  BeastResult result;
  http::request_parser<http::string_body> parser;
  parser.header_limit(kHeaderLimit);
  parser.body_limit(kBodyLimit);
  parser.eager(true);
  boost::beast::error_code ec;
  size_t used = 0;
  while (!ec && !parser.is_done() && used < wire.size()) {
    const size_t more = parser.put(boost::asio::buffer(wire.data() + used, wire.size() - used), ec);
    used += more;
    if (more == 0) break;
  }
  if (ec || !parser.is_done()) return result;
  const auto& message = parser.get();
  result.ok = true;
  result.method = std::string(message.method_string());
  result.target = std::string(message.target());
  for (const auto& field : message) {
    result.fields.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  result.body = message.body();
  result.keep_alive = parser.keep_alive();
  return result;
}

const std::vector<std::string>& Corpus() {
  static const std::vector<std::string> corpus = {
      "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
      "Content-Length: 17\r\n\r\n{\"model\":\"m\",\"x\"}",
      "POST /v1/completions?a=b HTTP/1.1\r\nHost: h\r\ntransfer-encoding: chunked\r\nx-tenant: "
      "t\r\n\r\n"
      "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
      "GET /v1/models HTTP/1.0\r\nConnection: keep-alive\r\nAuthorization: Bearer k\r\n\r\n",
      "POST /admin/backends HTTP/1.1\r\nHost: h\r\nConnection: close\r\nContent-Length: 2\r\n"
      "X-Empty:\r\nX-Tab:\tv\t\r\n\r\n{}",
      "GET /metrics HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n",
  };
  return corpus;
}

void ExpectSameAsBeast(const Parsed& ours, const BeastResult& beast) {
  ASSERT_TRUE(beast.ok);
  ASSERT_EQ(ours.error, Error::kNone) << Http1RequestParser::Describe(ours.error);
  EXPECT_TRUE(ours.done);
  EXPECT_EQ(ours.request.method, beast.method);
  EXPECT_EQ(ours.request.target, beast.target);
  EXPECT_EQ(ours.request.headers, beast.fields);
  EXPECT_EQ(ours.request.body, beast.body);
  EXPECT_EQ(ours.request.keep_alive, beast.keep_alive);
}

TEST(Http1RequestParserTest, ParsesWhatBeastParsesTheSameWayInAnyPieces) {
  for (const std::string& wire : Corpus()) {
    SCOPED_TRACE(wire);
    const BeastResult beast = ParseWithBeast(wire);
    for (size_t step = 1; step <= wire.size(); step += step < 8 ? 1 : 11) {
      ExpectSameAsBeast(Parse(wire, step), beast);
    }
  }
}

// Random corruptions of the corpus (a byte replaced, inserted or removed): whatever this parser
// accepts as a whole request, Beast's accepts too, and both read it the same way. (This parser
// may refuse more.)
TEST(Http1RequestParserTest, AcceptsNothingBeastRefuses) {
  std::mt19937 rng(20261130);
  const std::string alphabet = std::string("\r\n\t :;,=\"\\0019aAfFzZ-/?") + '\x7f' + '\x80' + '\0';
  int accepted = 0;
  int refused = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string wire = Corpus()[rng() % Corpus().size()];
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % wire.size();
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0:
          wire[at] = c;
          break;
        case 1:
          wire.insert(wire.begin() + static_cast<std::ptrdiff_t>(at), c);
          break;
        default:
          wire.erase(at, 1);
          break;
      }
    }
    const Parsed ours = Parse(wire, 1 + rng() % 16);
    if (ours.error != Error::kNone || !ours.done) {
      ++refused;
      continue;
    }
    ++accepted;
    SCOPED_TRACE(testing::Message() << "round " << round << ": " << wire);
    // Beast reads the same bytes as one request: compare on what ours used.
    ExpectSameAsBeast(
        ours, ParseWithBeast(std::string_view(wire).substr(0, wire.size() - ours.left_over)));
    if (HasFailure()) return;
  }
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(refused, 1000);
}

// A server must accept a target in absolute form (RFC 9112 3.2.2): it is served as its path.
TEST(Http1RequestParserTest, AbsoluteFormTargetsBecomeTheirOriginForm) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"http://gw.example:8080/v1/models?a=1", "/v1/models?a=1"},
      {"HTTPS://gw.example/health", "/health"},
      {"http://gw.example", "/"},
      {"http://gw.example?a=1", "/?a=1"},
      {"/v1/models", "/v1/models"},
  };
  for (const auto& [target, origin] : cases) {
    const Parsed p = Parse("GET " + std::string(target) + " HTTP/1.1\r\nHost: x\r\n\r\n");
    ASSERT_TRUE(p.done) << target;
    EXPECT_EQ(p.request.target, origin);
    EXPECT_EQ(p.request.path, origin.substr(0, origin.find('?')));
  }
}

// Only chunked is decoded: a body in another coding is refused (501), not handed on encoded.
// Also: an HTTP/1.0 request is marked (its responses cannot be chunked).
TEST(Http1RequestParserTest, TransferCodingsBesidesChunkedAreRefusedAndHttp10IsMarked) {
  const std::string body = "5\r\nhello\r\n0\r\n\r\n";
  EXPECT_EQ(
      Parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" + body).error,
      Error::kUnsupportedTransferCoding);
  EXPECT_EQ(Parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n" +
                  body)
                .error,
            Error::kUnsupportedTransferCoding);
  const Parsed chunked =
      Parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" + body);
  ASSERT_TRUE(chunked.done);
  EXPECT_EQ(chunked.request.body, "hello");
  EXPECT_FALSE(chunked.request.http10);
  const Parsed old = Parse("GET / HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(old.done);
  EXPECT_TRUE(old.request.http10);
}

std::string PostWithBody(size_t bytes, char fill) {
  return "POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\nContent-Length: " +
         std::to_string(bytes) + "\r\n\r\n" + std::string(bytes, fill);
}

// The server parses a connection's requests with one parser, Reset before each: whatever came
// before (any request, an error, a request cut short), it parses the next one as a new parser
// would.
TEST(Http1RequestParserTest, AResetParserParsesAsANewOneWould) {
  std::vector<std::string> wires = Corpus();
  wires.push_back(PostWithBody(12000, 'a'));
  wires.push_back(PostWithBody(40000, 'b'));  // over kKeptBodyBytes
  wires.push_back(PostWithBody(3, 'c'));
  wires.push_back("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nab");  // cut short
  wires.push_back("POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab");
  wires.push_back("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 2000000\r\n\r\n");  // too large
  wires.push_back("POST /x HTTP/1.1\r\nHost: h\r\nA b: c\r\n\r\n");                   // bad header
  wires.push_back("PO(ST /x HTTP/1.1\r\nHost: h\r\n\r\n");                            // bad line
  std::mt19937 rng(11);
  Http1RequestParser parser(kHeaderLimit, kBodyLimit);
  for (int round = 0; round < 3000; ++round) {
    const std::string& wire = wires[rng() % wires.size()];
    const size_t step = rng() % 2 == 0 ? SIZE_MAX : 1 + rng() % 64;
    parser.Reset();
    const Parsed reused = ParseWith(parser, wire, step);
    const Parsed fresh = Parse(wire, step);
    SCOPED_TRACE(testing::Message()
                 << "round " << round << ", step " << step << ": " << wire.substr(0, 80));
    ASSERT_EQ(reused.error, fresh.error);
    ASSERT_EQ(reused.done, fresh.done);
    EXPECT_EQ(reused.expects_continue, fresh.expects_continue);
    EXPECT_EQ(reused.left_over, fresh.left_over);
    EXPECT_EQ(reused.request.method, fresh.request.method);
    EXPECT_EQ(reused.request.target, fresh.request.target);
    EXPECT_EQ(reused.request.path, fresh.request.path);
    EXPECT_EQ(reused.request.headers, fresh.request.headers);
    EXPECT_EQ(reused.request.body, fresh.request.body);
    EXPECT_EQ(reused.request.keep_alive, fresh.request.keep_alive);
    if (HasFailure()) return;
  }
}

// What Reset is for: a body of the usual size lands in the memory the last one took; one over
// kKeptBodyBytes gives its memory back.
TEST(Http1RequestParserTest, ResetKeepsTheBodysMemoryUpToALimit) {
  Http1RequestParser parser(kHeaderLimit, kBodyLimit);
  ASSERT_TRUE(ParseWith(parser, PostWithBody(12000, 'a'), SIZE_MAX).done);
  const char* memory = parser.request.body.data();
  parser.Reset();
  ASSERT_TRUE(ParseWith(parser, PostWithBody(11000, 'b'), SIZE_MAX).done);
  EXPECT_EQ(parser.request.body.data(), memory);
  EXPECT_EQ(parser.request.body, std::string(11000, 'b'));

  parser.Reset();
  ASSERT_TRUE(ParseWith(parser, PostWithBody(40000, 'c'), SIZE_MAX).done);
  parser.Reset();
  EXPECT_LE(parser.request.body.capacity(), Http1RequestParser::kKeptBodyBytes);
  EXPECT_LT(parser.request.body.capacity(), 40000u);
}

TEST(Http1RequestParserTest, AnHttp11RequestNeedsExactlyOneHost) {
  EXPECT_EQ(Parse("GET /health HTTP/1.1\r\n\r\n").error, Error::kBadHost);
  EXPECT_EQ(Parse("GET /health HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n").error, Error::kBadHost);
  EXPECT_EQ(Parse("GET /health HTTP/1.0\r\nHost: a\r\nHOST: a\r\n\r\n").error, Error::kBadHost);
  EXPECT_EQ(Parse("GET /health HTTP/1.1\r\nhOsT: a\r\n\r\n").error, Error::kNone);
  EXPECT_EQ(Parse("GET /health HTTP/1.1\r\nHost:\r\n\r\n").error, Error::kNone);  // may be empty
  EXPECT_EQ(Parse("GET /health HTTP/1.0\r\n\r\n").error, Error::kNone);           // optional in 1.0
  EXPECT_EQ(Parse("GET /health HTTP/1.1\r\nHosts: a\r\n\r\n").error, Error::kBadHost);
}

std::string PostWithHeaders(const std::vector<std::pair<std::string, std::string>>& headers) {
  std::string wire = "POST /v1/chat/completions HTTP/1.1\r\n";
  for (const auto& [name, value] : headers) wire += name + ": " + value + "\r\n";
  return wire + "Content-Length: 2\r\n\r\n{}";
}

// A client sends much the same headers in the same order on each request (an OpenAI SDK: a
// dozen, most too long to sit inside a std::string): the next request's headers land in the
// memory the last one's took, and only what it sent is in request.headers. A value over
// kKeptHeaderBytes gives its memory back.
TEST(Http1RequestParserTest, ResetKeepsTheHeadersMemoryUpToALimit) {
  const std::string bearer = "Bearer sk-" + std::string(48, 'a');
  std::vector<std::pair<std::string, std::string>> sent = {
      {"User-Agent", "OpenAI/Python 1.54.4"},
      {"Authorization", bearer},
      {"X-Stainless-Package-Version", "1.54.4"},
      {"Content-Type", "application/json"},
      {"Host", "gw"}};
  Http1RequestParser parser(kHeaderLimit, kBodyLimit);
  ASSERT_TRUE(ParseWith(parser, PostWithHeaders(sent), SIZE_MAX).done);
  std::vector<const char*> memory;
  for (const auto& [name, value] : parser.request.headers) {
    memory.push_back(name.data());
    memory.push_back(value.data());
  }
  ASSERT_EQ(memory.size(), 12u);  // with Content-Length

  sent[1].second = "Bearer sk-" + std::string(48, 'b');
  parser.Reset();
  ASSERT_TRUE(ParseWith(parser, PostWithHeaders(sent), SIZE_MAX).done);
  ASSERT_EQ(parser.request.headers.size(), 6u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(parser.request.headers[i].first, sent[i].first);
    EXPECT_EQ(parser.request.headers[i].second, sent[i].second);
  }
  // The long names and values (the ones std::string keeps out of line) are where they were.
  EXPECT_EQ(parser.request.headers[1].second.data(), memory[3]);
  EXPECT_EQ(parser.request.headers[2].first.data(), memory[4]);
  EXPECT_EQ(parser.request.headers[3].second.data(), memory[7]);

  // Fewer headers: only those.
  parser.Reset();
  ASSERT_TRUE(ParseWith(parser, PostWithHeaders({{"Host", "gw"}}), SIZE_MAX).done);
  ASSERT_EQ(parser.request.headers.size(), 2u);
  EXPECT_EQ(parser.request.headers[0], (std::pair<std::string, std::string>("Host", "gw")));
  EXPECT_EQ(parser.request.headers[1].first, "Content-Length");

  // A long value is not kept for the next request.
  parser.Reset();
  ASSERT_TRUE(ParseWith(parser,
                        PostWithHeaders({{"Cookie", std::string(1000, 'c')}, {"Host", "gw"}}),
                        SIZE_MAX)
                  .done);
  parser.Reset();
  ASSERT_TRUE(
      ParseWith(parser, PostWithHeaders({{"Cookie", "short"}, {"Host", "gw"}}), SIZE_MAX).done);
  EXPECT_EQ(parser.request.headers[0].second, "short");
  EXPECT_LE(parser.request.headers[0].second.capacity(), Http1RequestParser::kKeptHeaderBytes);
}

}  // namespace
}  // namespace warmroute::net
