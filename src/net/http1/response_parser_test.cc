#include "net/http1/response_parser.h"

#include <gtest/gtest.h>

#include <boost/beast/http.hpp>
#include <random>
#include <string>
#include <vector>

namespace warmroute::net {
namespace {

namespace http = boost::beast::http;
using Error = Http1ResponseParser::Error;

struct Parsed {
  Error error = Error::kNone;
  bool done = false;
  bool keep_alive = false;
  UpstreamResponseHead head;
  std::string body;
};

// Feeds `wire` to a parser as a connection would: the bytes arrive in pieces of `step` (the last
// one shorter), the unconsumed rest is offered again with the next piece, and body bytes go
// through an output buffer of `out_size`. `eof`: the connection closes after the last byte.
Parsed Parse(std::string_view wire, size_t step = SIZE_MAX, size_t out_size = 4096, bool eof = true,
             bool head_request = false) {
  Parsed result;
  Http1ResponseParser parser;
  if (head_request) parser.SkipBody();
  std::string buffer;
  std::vector<char> out(out_size);
  size_t fed = 0;
  for (;;) {
    const size_t n = std::min(step, wire.size() - fed);
    buffer.append(wire.substr(fed, n));
    fed += n;
    // Parse until the parser makes no progress on what is buffered.
    for (;;) {
      size_t out_used = 0;
      const size_t used = parser.Put(buffer, out.data(), out.size(), out_used, result.error);
      buffer.erase(0, used);
      result.body.append(out.data(), out_used);
      if (result.error != Error::kNone) return result;
      if (parser.done() || (used == 0 && out_used == 0)) break;
    }
    if (parser.done()) break;
    if (fed == wire.size()) {
      if (eof) result.error = parser.PutEof();
      break;
    }
  }
  result.done = parser.done();
  result.keep_alive = parser.keep_alive();
  result.head = std::move(parser.head);
  return result;
}

TEST(Http1ResponseParserTest, ContentLengthBodyAndTheHeadersTheRelayKeeps) {
  const std::string wire =
      "HTTP/1.1 200 OK\r\n"
      "Server: nginx\r\n"
      "Content-Type: application/json\r\n"
      "Content-Length: 11\r\n"
      "Connection: keep-alive\r\n"
      "Keep-Alive: timeout=5\r\n"
      "X-Request-Id:  abc \t\r\n"
      "\r\n"
      "{\"ok\":true}";
  const Parsed p = Parse(wire, SIZE_MAX, 4096, /*eof=*/false);
  ASSERT_EQ(p.error, Error::kNone);
  EXPECT_TRUE(p.done);
  EXPECT_TRUE(p.keep_alive);
  EXPECT_EQ(p.head.status, 200);
  EXPECT_EQ(p.head.content_type, "application/json");
  EXPECT_FALSE(p.head.chunked);
  const HttpHeaders expected = {{"Server", "nginx"}, {"X-Request-Id", "abc"}};
  EXPECT_EQ(p.head.headers, expected);
  EXPECT_EQ(p.body, "{\"ok\":true}");
}

TEST(Http1ResponseParserTest, FramingHeadersAreRecognisedInAnyCaseAndOnlyByTheirWholeName) {
  const Parsed p = Parse(
      "HTTP/1.1 200 OK\r\ncOnTeNt-TyPe: text/plain\r\nCONTENT-LENGTH: 2\r\n"
      "Content-Lengths: 9\r\nContent-Typ: x\r\nX-Connection: close\r\n"
      "Connection: Keep-Alive\r\nX-Value: a\tb\x80\xff c d e f g h i j\r\n\r\nokEXTRA",
      SIZE_MAX, 4096, /*eof=*/false);
  ASSERT_EQ(p.error, Error::kNone);
  EXPECT_TRUE(p.done);
  EXPECT_TRUE(p.keep_alive);
  EXPECT_EQ(p.head.content_type, "text/plain");
  EXPECT_EQ(p.body, "ok");
  const HttpHeaders expected = {{"Content-Lengths", "9"},
                                {"Content-Typ", "x"},
                                {"X-Connection", "close"},
                                {"X-Value", "a\tb\x80\xff c d e f g h i j"}};
  EXPECT_EQ(p.head.headers, expected);
  // A control character or DEL anywhere in a long value, in any position of an 8-byte word.
  for (size_t at = 0; at < 24; ++at) {
    for (char bad : {'\x01', '\x7f', '\r', '\n', '\0', '\x1f'}) {
      std::string value(24, 'v');
      value[at] = bad;
      const std::string wire = "HTTP/1.1 200 OK\r\nX: " + value + "\r\nContent-Length: 0\r\n\r\n";
      EXPECT_NE(Parse(wire).error, Error::kNone) << "at " << at << " byte " << int{bad};
    }
  }
}

TEST(Http1ResponseParserTest, ChunkedBodyWithExtensionsAndTrailersInAnyPieces) {
  const std::string wire =
      "HTTP/1.1 200 OK\r\n"
      "Content-Type: text/event-stream\r\n"
      "Transfer-Encoding: chunked\r\n"
      "\r\n"
      "6\r\ndata: \r\n"
      "A;name=value ; q=\"a \\\"b\\\"\"\r\n0123456789\r\n"
      "0\r\n"
      "Expires: never\r\n"
      "\r\n";
  for (size_t step : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, SIZE_MAX}) {
    for (size_t out_size : {size_t{1}, size_t{4}, size_t{4096}}) {
      SCOPED_TRACE(testing::Message() << "step " << step << " out " << out_size);
      const Parsed p = Parse(wire, step, out_size, /*eof=*/false);
      ASSERT_EQ(p.error, Error::kNone);
      EXPECT_TRUE(p.done);
      EXPECT_TRUE(p.keep_alive);
      EXPECT_TRUE(p.head.chunked);
      EXPECT_EQ(p.head.content_type, "text/event-stream");
      EXPECT_TRUE(p.head.headers.empty());
      EXPECT_EQ(p.body, "data: 0123456789");
    }
  }
}

TEST(Http1ResponseParserTest, BodyWithoutLengthRunsToTheClose) {
  const std::string wire = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it";
  const Parsed open = Parse(wire, SIZE_MAX, 4096, /*eof=*/false);
  EXPECT_EQ(open.error, Error::kNone);
  EXPECT_FALSE(open.done);
  EXPECT_EQ(open.body, "all of it");
  const Parsed closed = Parse(wire, 4);
  EXPECT_EQ(closed.error, Error::kNone);
  EXPECT_TRUE(closed.done);
  EXPECT_FALSE(closed.keep_alive);
  EXPECT_EQ(closed.body, "all of it");
  // A coding other than chunked: the body runs to the close too.
  const Parsed gzip = Parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzz");
  EXPECT_EQ(gzip.error, Error::kNone);
  EXPECT_TRUE(gzip.done);
  EXPECT_FALSE(gzip.head.chunked);
  EXPECT_EQ(gzip.body, "zz");
}

TEST(Http1ResponseParserTest, NoBodyFor204And304AndHeadAndInterimResponsesAreSkipped) {
  for (const char* wire : {"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
                           "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n"}) {
    const Parsed p = Parse(wire, SIZE_MAX, 4096, /*eof=*/false);
    EXPECT_EQ(p.error, Error::kNone) << wire;
    EXPECT_TRUE(p.done) << wire;
    EXPECT_TRUE(p.keep_alive) << wire;
    EXPECT_TRUE(p.body.empty()) << wire;
  }
  const Parsed head = Parse("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", SIZE_MAX, 4096,
                            /*eof=*/false, /*head_request=*/true);
  EXPECT_EQ(head.error, Error::kNone);
  EXPECT_TRUE(head.done);
  EXPECT_TRUE(head.keep_alive);

  const Parsed interim = Parse(
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
      "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
      5, 4096, /*eof=*/false);
  EXPECT_EQ(interim.error, Error::kNone);
  EXPECT_EQ(interim.head.status, 201);
  EXPECT_TRUE(interim.head.headers.empty());
  EXPECT_EQ(interim.body, "ok");
}

TEST(Http1ResponseParserTest, KeepAliveFollowsTheVersionAndConnection) {
  const auto keep_alive = [](const std::string& head) {
    const Parsed p = Parse(head + "Content-Length: 0\r\n\r\n", SIZE_MAX, 4096, false);
    EXPECT_EQ(p.error, Error::kNone) << head;
    return p.keep_alive;
  };
  EXPECT_TRUE(keep_alive("HTTP/1.1 200 OK\r\n"));
  EXPECT_FALSE(keep_alive("HTTP/1.1 200 OK\r\nConnection: close\r\n"));
  EXPECT_FALSE(keep_alive("HTTP/1.1 200 OK\r\nConnection: Upgrade, CLOSE\r\n"));
  EXPECT_FALSE(keep_alive("HTTP/1.0 200 OK\r\n"));
  EXPECT_TRUE(keep_alive("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n"));
}

TEST(Http1ResponseParserTest, MalformedResponsesAreRefused) {
  const std::vector<std::pair<std::string, Error>> cases = {
      {"HTTP/2.0 200 OK\r\n\r\n", Error::kBadStatusLine},
      {"HTTP/1.1 200\r\n\r\n", Error::kBadStatusLine},
      {"HTTP/1.1 20x OK\r\n\r\n", Error::kBadStatusLine},
      {"HTTP/1.1 099 Low\r\n\r\n", Error::kBadStatusLine},
      {"HTTP/1.1 200 O\x01K\r\n\r\n", Error::kBadStatusLine},
      {"http/1.1 200 OK\r\n\r\n", Error::kBadStatusLine},
      {"\r\nHTTP/1.1 200 OK\r\n\r\n", Error::kBadStatusLine},
      {"HTTP/1.1 200 OK\r\nNo colon\r\n\r\n", Error::kBadHeader},
      {"HTTP/1.1 200 OK\r\nName : v\r\n\r\n", Error::kBadHeader},
      {"HTTP/1.1 200 OK\r\n: v\r\n\r\n", Error::kBadHeader},
      {"HTTP/1.1 200 OK\r\nA: x\ny\r\n\r\n", Error::kBadHeader},
      {"HTTP/1.1 200 OK\r\nA: x\r\n folded\r\n\r\n", Error::kBadHeader},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", Error::kBadContentLength},
      {"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", Error::kBadContentLength},
      {"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", Error::kBadContentLength},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
       Error::kBadContentLength},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
       Error::kBadTransferEncoding},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n",
       Error::kBadTransferEncoding},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", Error::kBadTransferEncoding},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
       Error::kBadTransferEncoding},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nz\r\n", Error::kBadChunk},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n", Error::kBadChunk},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;\r\nab\r\n", Error::kBadChunk},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;a=\"b\r\nab\r\n", Error::kBadChunk},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n11111111111111111\r\n",
       Error::kBadChunk},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nbad trailer\r\n\r\n",
       Error::kBadChunk},
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc", Error::kPartialMessage},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n",
       Error::kPartialMessage},
      {"HTTP/1.1 200 OK\r\nContent-", Error::kPartialMessage},
      {"HTTP/1.1 200 OK\r\nX: " + std::string(9000, 'a') + "\r\n\r\n", Error::kHeaderTooLarge},
      {"HTTP/1.1 200 OK\r\nX: " + std::string(9000, 'a'), Error::kHeaderTooLarge},
  };
  for (const auto& [wire, error] : cases) {
    for (size_t step : {size_t{1}, SIZE_MAX}) {
      EXPECT_EQ(Parse(wire, step).error, error)
          << Http1ResponseParser::Describe(Parse(wire, step).error) << " for step " << step << ": "
          << wire.substr(0, 120);
    }
  }
}

// Beast's parser as the reference: what it makes of `wire` (a whole message, then the close).
struct BeastResult {
  bool ok = false;
  int status = 0;
  std::vector<std::pair<std::string, std::string>> fields;
  std::string body;
  bool keep_alive = false;
  bool chunked = false;
};

BeastResult ParseWithBeast(std::string_view wire) {
  BeastResult result;
  http::response_parser<http::string_body> parser;
  parser.body_limit(boost::none);
  boost::beast::error_code ec;
  size_t used = 0;
  // The head's fields are taken when the head is done: trailer fields join them later.
  while (!ec && !parser.is_done()) {
    const size_t more = parser.put(boost::asio::buffer(wire.data() + used, wire.size() - used), ec);
    used += more;
    if (parser.is_header_done() && result.fields.empty()) {
      for (const auto& field : parser.get()) {
        result.fields.emplace_back(std::string(field.name_string()), std::string(field.value()));
      }
      parser.eager(true);
    }
    if (more == 0) break;
  }
  if (ec == http::error::need_more) ec = {};
  if (!ec && !parser.is_done()) parser.put_eof(ec);
  if (ec || !parser.is_done()) return result;
  const auto& message = parser.get();
  result.ok = true;
  result.status = message.result_int();
  result.body = message.body();
  result.keep_alive = parser.keep_alive();
  result.chunked = parser.chunked();
  return result;
}

// The fields of `beast` that the relay keeps.
HttpHeaders Relayed(const BeastResult& beast) {
  HttpHeaders kept;
  for (const auto& [name, value] : beast.fields) {
    if (IsHopByHopHeader(name) || HeaderNameIs(name, "content-length") ||
        HeaderNameIs(name, "content-type")) {
      continue;
    }
    kept.emplace_back(name, value);
  }
  return kept;
}

const std::vector<std::string>& Corpus() {
  static const std::vector<std::string> corpus = {
      "HTTP/1.1 200 OK\r\nServer: vllm\r\nContent-Type: application/json\r\n"
      "Content-Length: 17\r\n\r\n{\"id\":\"cmpl-1\"}\r\n",
      "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
      "transfer-encoding: chunked\r\ndate: Mon, 30 Nov 2026 10:00:00 GMT\r\n\r\n"
      "f\r\ndata: {\"a\":1}\n\n\r\ne\r\ndata: [DONE]\n\n\r\n0\r\n\r\n",
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
      "Content-Length: 2\r\nConnection: close\r\n\r\n{}",
      "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 3\r\nX-A: 1\r\n\r\nabc",
      "HTTP/1.1 404 Not Found\r\nX-Empty:\r\nX-Tab:\tv\t\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\n",
      "HTTP/1.1 200 \r\nContent-Type: text/plain\r\n\r\nto the close",
  };
  return corpus;
}

void ExpectSameAsBeast(const Parsed& ours, const BeastResult& beast) {
  ASSERT_TRUE(beast.ok);
  ASSERT_EQ(ours.error, Error::kNone) << Http1ResponseParser::Describe(ours.error);
  EXPECT_TRUE(ours.done);
  EXPECT_EQ(ours.head.status, beast.status);
  EXPECT_EQ(ours.head.headers, Relayed(beast));
  EXPECT_EQ(ours.body, beast.body);
  EXPECT_EQ(ours.keep_alive, beast.keep_alive);
  EXPECT_EQ(ours.head.chunked, beast.chunked);
}

TEST(Http1ResponseParserTest, BodyBytesBeforeABadChunkComeFirstThenTheError) {
  // A relay forwards what was decoded (a whole SSE event) before it reports the error.
  const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::vector<std::string> bodies = {
      "6\r\ndata: \r\nZZZ\r\nhello\r\n0\r\n\r\n",  // a bad chunk-size line
      "6\r\ndata: X\r\n0\r\n\r\n",                 // chunk data longer than its size
      "6\r\ndata: \r\n0\r\nbad trailer\r\n\r\n",   // a bad trailer field
  };
  for (const std::string& body : bodies) {
    const std::string wire = head + body;
    Http1ResponseParser parser;
    char out[64];
    size_t out_used = 0;
    Error error = Error::kNone;
    const size_t used = parser.Put(wire, out, sizeof out, out_used, error);
    EXPECT_EQ(error, Error::kNone) << body;
    EXPECT_EQ(std::string_view(out, out_used), "data: ") << body;
    ASSERT_LT(used, wire.size()) << body;
    out_used = 0;
    parser.Put(std::string_view(wire).substr(used), out, sizeof out, out_used, error);
    EXPECT_EQ(error, Error::kBadChunk) << body;
    EXPECT_EQ(out_used, 0u) << body;
  }
}

TEST(Http1ResponseParserTest, ParsesWhatBeastParsesTheSameWayInAnyPieces) {
  for (const std::string& wire : Corpus()) {
    SCOPED_TRACE(wire);
    const BeastResult beast = ParseWithBeast(wire);
    for (size_t step = 1; step <= wire.size(); step += step < 8 ? 1 : 13) {
      for (size_t out_size : {size_t{3}, size_t{4096}}) {
        ExpectSameAsBeast(Parse(wire, step, out_size), beast);
      }
    }
  }
}

// Random corruptions of the corpus (a byte replaced, inserted or removed): whatever this parser
// accepts, Beast's accepts too, and both read it the same way. (This parser may refuse more.)
TEST(Http1ResponseParserTest, AcceptsNothingBeastRefuses) {
  std::mt19937 rng(20261130);
  const std::string alphabet = std::string("\r\n\t :;,=\"\\0019aAfFzZ-") + '\x7f' + '\x80' + '\0';
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
    const Parsed ours = Parse(wire, 1 + rng() % 16, 1 + rng() % 64);
    if (ours.error != Error::kNone) {
      ++refused;
      continue;
    }
    // A 1xx is skipped here and is the whole message to Beast: not comparable.
    if (ours.head.status < 200 || wire.find("HTTP/1.1 1") != std::string::npos) continue;
    ++accepted;
    SCOPED_TRACE(testing::Message() << "round " << round << ": " << wire);
    ExpectSameAsBeast(ours, ParseWithBeast(wire));
    if (HasFailure()) return;
  }
  // The corruptions exercised both outcomes.
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(refused, 1000);
}

}  // namespace
}  // namespace warmroute::net
