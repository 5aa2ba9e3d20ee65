// UpstreamPool / UpstreamExchange against a real HttpServer on loopback (one io_context).
#include "net/http1/http_client.h"

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "net/http1/http_server.h"

namespace warmroute::net {
namespace {

namespace asio = boost::asio;
using Timer = asio::basic_waitable_timer<std::chrono::steady_clock,
                                         asio::wait_traits<std::chrono::steady_clock>, Executor>;

Task<void> Sleep(std::chrono::milliseconds d) {
  Timer timer(co_await asio::this_coro::executor, d);
  co_await timer.async_wait(asio::use_awaitable_t<Executor>{});
}

class HttpClientTest : public ::testing::Test {
 protected:
  // Starts a server whose handler is `handler`; returns its port.
  uint16_t Serve(HttpHandler handler, HttpServerOptions options = {}) {
    auto server = HttpServer::Create(io_, std::move(options), std::move(handler));
    EXPECT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    server_->Start();
    return server_->port();
  }

  // Runs `body` to completion (then stops the server so io.run() returns).
  void Run(std::function<Task<void>()> body) {
    std::exception_ptr failure;
    asio::co_spawn(
        io_,
        [&]() -> Task<void> {
          co_await body();
          if (server_) server_->Stop();
        },
        [&](std::exception_ptr e) {
          failure = e;
          if (server_) server_->Stop();
        });
    io_.run();
    if (failure) std::rethrow_exception(failure);
  }

  asio::io_context io_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpClientTest, PostsTheBodyAndReadsTheWholeResponseThenReusesTheConnection) {
  std::string last_host;
  size_t spare_capacity = 0;
  const uint16_t port = Serve([&](HttpRequest& request, ResponseWriter& writer) -> Task<void> {
    last_host = std::string(request.Header("host"));
    spare_capacity = request.body.capacity() - request.body.size();
    ResponseHead head;
    head.headers.emplace_back("x-echo-method", request.method);
    std::string body = "echo:" + request.body;  // (GCC 12: no temporaries in co_await)
    co_await writer.Reply(head, std::move(body));
  });
  Run([&]() -> Task<void> {
    UpstreamPool pool(io_.get_executor(), "127.0.0.1", port);
    HttpHeaders headers = {{"content-type", "application/json"}, {"x-tenant", "acme"}};
    for (int i = 0; i < 3; ++i) {
      UpstreamRequest request{.method = "POST", .target = "/v1/x", .headers = &headers,
                              .body = std::string_view("{\"a\":1}")};
      auto x = co_await UpstreamExchange::Start(pool, request, UpstreamTimeouts{});
      EXPECT_TRUE(x.ok()) << x.status();
      if (!x.ok()) co_return;
      EXPECT_EQ((*x)->head().status, 200);
      EXPECT_EQ((*x)->head().content_type, "application/json");
      bool has_echo = false;
      for (auto& [n, v] : (*x)->head().headers) has_echo |= (n == "x-echo-method" && v == "POST");
      EXPECT_TRUE(has_echo);
      if (i == 2) {  // TakeHead moves the headers and content type out and keeps the rest
        const UpstreamResponseHead taken = (*x)->TakeHead();
        EXPECT_EQ(taken.status, 200);
        EXPECT_EQ(taken.content_type, "application/json");
        EXPECT_EQ(taken.headers.size(), 1u);
        EXPECT_TRUE((*x)->head().headers.empty());
        EXPECT_TRUE((*x)->head().content_type.empty());
        EXPECT_EQ((*x)->head().status, 200);
      }
      auto body = co_await (*x)->ReadAll(1 << 20);
      EXPECT_TRUE(body.ok());
      EXPECT_EQ(*body, "echo:{\"a\":1}");
      EXPECT_TRUE((*x)->done());
      x->reset();
      EXPECT_EQ(pool.idle_connections(), 1u) << "the connection goes back to the pool";
    }
    EXPECT_EQ(last_host, "127.0.0.1:" + std::to_string(port));
    EXPECT_GE(spare_capacity, kBodySpareCapacity) << "room for a parser to read past the body";
  });
}

TEST_F(HttpClientTest, HopByHopAndLengthHeadersOfTheResponseAreNotRelayed) {
  // The server sends every hop-by-hop header (any case) and a few end-to-end ones; only the
  // end-to-end ones reach head().headers (Content-Type goes to head().content_type).
  const uint16_t port = Serve([&](HttpRequest&, ResponseWriter& writer) -> Task<void> {
    ResponseHead head;
    head.content_type = "text/plain";
    for (const char* name : {"Keep-Alive", "TE", "trailer", "UPGRADE", "Proxy-Connection",
                             "x-request-id", "Cache-Control", "x-connection-note"}) {
      head.headers.emplace_back(name, "v");
    }
    co_await writer.Reply(head, std::string("ok"));
  });
  Run([&]() -> Task<void> {
    UpstreamPool pool(io_.get_executor(), "127.0.0.1", port);
    UpstreamRequest request{.method = "GET", .target = "/", .headers = nullptr, .body = {}};
    auto x = co_await UpstreamExchange::Start(pool, request, UpstreamTimeouts{});
    EXPECT_TRUE(x.ok()) << x.status();
    if (!x.ok()) co_return;
    EXPECT_EQ((*x)->head().content_type, "text/plain");
    std::vector<std::string> names;
    for (const auto& [name, value] : (*x)->head().headers) names.push_back(name);
    EXPECT_EQ(names, (std::vector<std::string>{"x-request-id", "Cache-Control",
                                               "x-connection-note"}));
    auto body = co_await (*x)->ReadAll(1 << 20);
    EXPECT_TRUE(body.ok());
  });
}

TEST_F(HttpClientTest, RelaysStreamPiecesAsTheyArriveNotAtTheEnd) {
  const uint16_t port = Serve([&](HttpRequest&, ResponseWriter& writer) -> Task<void> {
    ResponseHead head;
    head.content_type = "text/event-stream";
    co_await writer.StartStream(head);
    for (int i = 0; i < 3; ++i) {
      const std::string event = "data: " + std::to_string(i) + "\n\n";
      co_await writer.WriteChunk(event);
      co_await Sleep(std::chrono::milliseconds(60));
    }
    co_await writer.FinishStream();
  });
  Run([&]() -> Task<void> {
    UpstreamPool pool(io_.get_executor(), "127.0.0.1", port);
    auto start = std::chrono::steady_clock::now();
    auto x = co_await UpstreamExchange::Start(pool, UpstreamRequest{}, UpstreamTimeouts{});
    EXPECT_TRUE(x.ok()) << x.status();
    if (!x.ok()) co_return;
    EXPECT_TRUE((*x)->head().chunked);
    std::string all;
    int pieces = 0;
    for (;;) {
      auto piece = co_await (*x)->ReadSome();
      EXPECT_TRUE(piece.ok());
      if (!piece.ok() || piece->empty()) break;
      if (pieces == 0) {
        EXPECT_EQ(*piece, "data: 0\n\n");
        // The first event arrives long before the stream's end (~180 ms).
        EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(120));
      }
      all.append(*piece);
      ++pieces;
    }
    EXPECT_EQ(all, "data: 0\n\ndata: 1\n\ndata: 2\n\n");
    EXPECT_EQ(pieces, 3);
  });
}

TEST_F(HttpClientTest, ConnectRefusedIsAConnectFailure) {
  // Bind and close a server to get a port nobody listens on.
  uint16_t dead_port;
  {
    asio::io_context other;
    auto s = HttpServer::Create(other, HttpServerOptions{}, nullptr);
    ASSERT_TRUE(s.ok());
    dead_port = (*s)->port();
  }
  Run([&]() -> Task<void> {
    UpstreamPool pool(io_.get_executor(), "127.0.0.1", dead_port);
    auto x = co_await UpstreamExchange::Start(pool, UpstreamRequest{}, UpstreamTimeouts{});
    EXPECT_FALSE(x.ok());
    EXPECT_EQ(x.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_TRUE(ConnectFailed(x.status()));
  });
}

TEST_F(HttpClientTest, FirstByteTimeoutIsDeadlineExceededNotAConnectFailure) {
  const uint16_t port = Serve([&](HttpRequest&, ResponseWriter& writer) -> Task<void> {
    co_await Sleep(std::chrono::milliseconds(400));
    ResponseHead head;
    std::string body = "late";
    co_await writer.Reply(head, std::move(body));
  });
  Run([&]() -> Task<void> {
    UpstreamPool pool(io_.get_executor(), "127.0.0.1", port);
    UpstreamTimeouts timeouts;
    timeouts.first_byte = std::chrono::milliseconds(100);
    auto x = co_await UpstreamExchange::Start(pool, UpstreamRequest{}, timeouts);
    EXPECT_EQ(x.status().code(), absl::StatusCode::kDeadlineExceeded);
    EXPECT_FALSE(ConnectFailed(x.status()));
    co_await Sleep(std::chrono::milliseconds(400));  // let the server's handler end
  });
}

TEST_F(HttpClientTest, AbandoningAStreamClosesTheConnectionSoTheServerSeesTheCancel) {
  bool handler_cancelled = false;
  const uint16_t port = Serve([&](HttpRequest&, ResponseWriter& writer) -> Task<void> {
    struct Flag {
      bool& cancelled;
      bool finished = false;
      ~Flag() { cancelled = !finished; }
    } flag{handler_cancelled};
    ResponseHead head;
    head.content_type = "text/event-stream";
    co_await writer.StartStream(head);
    for (int i = 0; i < 50; ++i) {
      co_await writer.WriteChunk("data: x\n\n");
      co_await Sleep(std::chrono::milliseconds(20));
    }
    co_await writer.FinishStream();
    flag.finished = true;
  });
  Run([&]() -> Task<void> {
    UpstreamPool pool(io_.get_executor(), "127.0.0.1", port);
    {
      auto x = co_await UpstreamExchange::Start(pool, UpstreamRequest{}, UpstreamTimeouts{});
      EXPECT_TRUE(x.ok());
      if (!x.ok()) co_return;
      auto piece = co_await (*x)->ReadSome();
      EXPECT_TRUE(piece.ok() && !piece->empty());
    }  // abandoned mid-stream
    EXPECT_EQ(pool.idle_connections(), 0u);
    co_await Sleep(std::chrono::milliseconds(100));
    EXPECT_TRUE(handler_cancelled) << "the server's handler was cancelled within 100 ms";
  });
}

TEST_F(HttpClientTest, AConnectionTheServerClosedWhileIdleIsReplaced) {
  HttpServerOptions options;
  options.idle_timeout = std::chrono::milliseconds(50);  // the server drops idle connections
  auto server = HttpServer::Create(io_, options, [](HttpRequest&, ResponseWriter& w) -> Task<void> {
    ResponseHead head;
    std::string body = "ok";
    co_await w.Reply(head, std::move(body));
  });
  ASSERT_TRUE(server.ok());
  server_ = std::move(*server);
  server_->Start();
  const uint16_t port = server_->port();
  Run([&]() -> Task<void> {
    UpstreamPool pool(io_.get_executor(), "127.0.0.1", port);
    for (int i = 0; i < 2; ++i) {
      auto x = co_await UpstreamExchange::Start(pool, UpstreamRequest{}, UpstreamTimeouts{});
      EXPECT_TRUE(x.ok()) << x.status();
      if (!x.ok()) co_return;
      auto body = co_await (*x)->ReadAll(100);
      EXPECT_EQ(body.value_or(""), "ok");
      x->reset();
      co_await Sleep(std::chrono::milliseconds(150));  // the server closes the idle connection
    }
  });
}

// A sweep closes the idle connections the upstream closed (its keep-alive timeout), which would
// otherwise wait in CLOSE-WAIT until their next use, and keeps the ones still open.
TEST_F(HttpClientTest, CloseStaleClosesOnlyTheConnectionsTheServerClosed) {
  HttpServerOptions options;
  options.idle_timeout = std::chrono::milliseconds(100);  // the server drops idle connections
  const uint16_t port = Serve(
      [](HttpRequest&, ResponseWriter& w) -> Task<void> {
        ResponseHead head;
        std::string body = "ok";
        co_await w.Reply(head, std::move(body));
      },
      options);
  Run([&]() -> Task<void> {
    UpstreamPool pool(io_.get_executor(), "127.0.0.1", port);
    auto exchange_once = [&]() -> Task<void> {
      auto x = co_await UpstreamExchange::Start(pool, UpstreamRequest{}, UpstreamTimeouts{});
      EXPECT_TRUE(x.ok()) << x.status();
      if (!x.ok()) co_return;
      EXPECT_EQ((co_await (*x)->ReadAll(100)).value_or(""), "ok");
    };
    co_await exchange_once();
    EXPECT_EQ(pool.idle_connections(), 1u);
    co_await Sleep(std::chrono::milliseconds(30));  // idle long enough to be probed, still open
    EXPECT_EQ(pool.CloseStale(), 0u);
    EXPECT_EQ(pool.idle_connections(), 1u);
    co_await Sleep(std::chrono::milliseconds(250));  // the server has closed it
    EXPECT_EQ(pool.CloseStale(), 1u);
    EXPECT_EQ(pool.idle_connections(), 0u);
    co_await exchange_once();  // a new connection
    EXPECT_EQ(pool.idle_connections(), 1u);
  });
}

// An upstream that sends bytes on an idle keep-alive connection (here a 408, as some servers do
// on their idle timeout): reused, that connection handed those bytes to the next request as its
// response, and each later request got its predecessor's.
TEST_F(HttpClientTest, AConnectionTheUpstreamSpokeOnWhileIdleIsNotReused) {
  using tcp = asio::ip::tcp;
  tcp::acceptor acceptor(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const uint16_t port = acceptor.local_endpoint().port();
  int accepted = 0;
  // Answers each connection's first request with its number, then, 30 ms later, sends a 408.
  asio::co_spawn(
      io_,
      [&]() -> Task<void> {
        for (;;) {
          auto [ec, socket] =
              co_await acceptor.async_accept(asio::as_tuple(asio::use_awaitable_t<Executor>{}));
          if (ec) co_return;
          const int n = ++accepted;
          asio::co_spawn(
              io_,
              [n, s = std::make_shared<tcp::socket>(std::move(socket))]() -> Task<void> {
                constexpr auto kTuple = asio::as_tuple(asio::use_awaitable_t<Executor>{});
                std::string request;
                auto [rec, got] = co_await asio::async_read_until(*s, asio::dynamic_buffer(request),
                                                                  "\r\n\r\n", kTuple);
                if (rec) co_return;
                const std::string answer =
                    "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n" + std::to_string(n);
                co_await asio::async_write(*s, asio::buffer(answer), kTuple);
                co_await Sleep(std::chrono::milliseconds(30));
                constexpr std::string_view k408 =
                    "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n";
                co_await asio::async_write(*s, asio::buffer(k408), kTuple);
                co_await Sleep(std::chrono::milliseconds(500));
              },
              asio::detached);
        }
      },
      asio::detached);
  Run([&]() -> Task<void> {
    UpstreamPool pool(io_.get_executor(), "127.0.0.1", port);
    for (const char* expected : {"1", "2"}) {
      auto x = co_await UpstreamExchange::Start(pool, UpstreamRequest{}, UpstreamTimeouts{});
      EXPECT_TRUE(x.ok()) << x.status();
      if (!x.ok()) co_return;
      EXPECT_EQ((*x)->head().status, 200);
      auto body = co_await (*x)->ReadAll(100);
      EXPECT_EQ(body.value_or(""), expected);
      x->reset();
      EXPECT_EQ(pool.idle_connections(), 1u);
      co_await Sleep(std::chrono::milliseconds(300));  // the 408 arrives
    }
    EXPECT_EQ(accepted, 2) << "the connection that got the 408 was not reused";
    acceptor.close();
  });
}

// A 204 or 304 response has no body (RFC 9110 8.6): the server sends neither a body nor a
// Content-Length for one, whatever the handler gave, and the connection stays usable.
TEST_F(HttpClientTest, BodilessStatusesAreSentWithoutABody) {
  const uint16_t port = Serve([&](HttpRequest& request, ResponseWriter& writer) -> Task<void> {
    ResponseHead head;
    head.status = request.target == "/304" ? 304 : 204;
    std::string body = "ignored";
    co_await writer.Reply(head, std::move(body));
  });
  Run([&]() -> Task<void> {
    UpstreamPool pool(io_.get_executor(), "127.0.0.1", port);
    for (const char* target : {"/204", "/304", "/204"}) {
      UpstreamRequest request{.method = "GET", .target = target, .headers = nullptr, .body = {}};
      auto x = co_await UpstreamExchange::Start(pool, request, UpstreamTimeouts{});
      EXPECT_TRUE(x.ok()) << x.status();
      if (!x.ok()) co_return;
      auto body = co_await (*x)->ReadAll(100);
      EXPECT_EQ(body.value_or("?"), "");
      x->reset();
      EXPECT_EQ(pool.idle_connections(), 1u) << target << ": nothing was left after the head";
    }
  });
}

// A body given piece by piece, with a pause before each piece after the first.
class PacedBody final : public BodyReader {
 public:
  PacedBody(std::vector<std::string> pieces, std::chrono::milliseconds pause)
      : pieces_(std::move(pieces)), pause_(pause) {}
  Task<absl::StatusOr<std::string_view>> ReadSome() override {
    if (next_ == pieces_.size()) co_return std::string_view();
    if (next_ > 0) co_await Sleep(pause_);
    co_return std::string_view(pieces_[next_++]);
  }
  bool done() const override { return next_ == pieces_.size(); }

 private:
  std::vector<std::string> pieces_;
  std::chrono::milliseconds pause_;
  size_t next_ = 0;
};

TEST_F(HttpClientTest, AStreamedBodyReachesAStreamingHandlerPieceByPiece) {
  // The handler records when each piece arrived: the first must be there long before the client
  // has sent the last (nothing waits for the whole body on either side).
  std::vector<std::chrono::steady_clock::time_point> arrivals;
  std::string received;
  HttpServerOptions options;
  options.stream_body = [](const HttpRequest& head) { return head.path == "/upload"; };
  const uint16_t port = Serve(
      [&](HttpRequest& request, ResponseWriter& writer) -> Task<void> {
        EXPECT_NE(request.body_reader, nullptr);
        EXPECT_TRUE(request.body.empty());
        for (;;) {
          absl::StatusOr<std::string_view> piece = co_await request.body_reader->ReadSome();
          EXPECT_TRUE(piece.ok()) << piece.status();
          if (!piece.ok() || piece->empty()) break;
          arrivals.push_back(std::chrono::steady_clock::now());
          received.append(*piece);
        }
        EXPECT_TRUE(request.body_reader->done());
        co_await writer.Reply(ResponseHead(), std::to_string(received.size()));
      },
      options);
  const std::string big(100'000, 'x');
  PacedBody body({"first-", big, "-last"}, std::chrono::milliseconds(300));
  const auto start = std::chrono::steady_clock::now();
  Run([&]() -> Task<void> {
    UpstreamPool pool(io_.get_executor(), "127.0.0.1", port);
    UpstreamRequest request{.method = "POST", .target = "/upload", .headers = nullptr,
                            .body = {}, .body_stream = &body};
    auto exchange = co_await UpstreamExchange::Start(pool, request, UpstreamTimeouts{});
    EXPECT_TRUE(exchange.ok()) << exchange.status();
    if (!exchange.ok()) co_return;
    auto reply = co_await (*exchange)->ReadAll(1 << 20);
    EXPECT_EQ(*reply, std::to_string(6 + big.size() + 5));
  });
  EXPECT_EQ(received, "first-" + big + "-last");
  ASSERT_GE(arrivals.size(), 3u);
  EXPECT_LT(arrivals.front() - start, std::chrono::milliseconds(250));  // before the first pause
  EXPECT_GE(arrivals.back() - start, std::chrono::milliseconds(550));   // after both pauses
}

TEST_F(HttpClientTest, OnlyTheChosenRequestsAreStreamedAndABodyOverTheLimitFailsTheRead) {
  HttpServerOptions options;
  options.body_limit_bytes = 1000;
  options.stream_body = [](const HttpRequest& head) { return head.path == "/upload"; };
  absl::Status seen = absl::OkStatus();
  const uint16_t port = Serve(
      [&](HttpRequest& request, ResponseWriter& writer) -> Task<void> {
        if (request.path != "/upload") {
          EXPECT_EQ(request.body_reader, nullptr);
          co_await writer.Reply(ResponseHead(), request.body);
          co_return;
        }
        for (;;) {
          absl::StatusOr<std::string_view> piece = co_await request.body_reader->ReadSome();
          if (!piece.ok()) {
            seen = piece.status();
            break;
          }
          if (piece->empty()) break;
        }
        // (Not a conditional expression inside the co_await: GCC 12 destroys its Status
        // temporary twice there.)
        absl::Status reply = absl::InternalError("no error");
        if (!seen.ok()) reply = seen;
        co_await writer.ReplyError(reply);
      },
      options);
  Run([&]() -> Task<void> {
    UpstreamPool pool(io_.get_executor(), "127.0.0.1", port);
    UpstreamRequest whole{.method = "POST", .target = "/echo", .headers = nullptr,
                          .body = "hello", .body_stream = nullptr};
    auto a = co_await UpstreamExchange::Start(pool, whole, UpstreamTimeouts{});
    EXPECT_TRUE(a.ok()) << a.status();
    if (a.ok()) {
      EXPECT_EQ(*co_await (*a)->ReadAll(100), "hello");
    }
    PacedBody body({std::string(600, 'a'), std::string(600, 'b')}, std::chrono::milliseconds(1));
    UpstreamRequest streamed{.method = "POST", .target = "/upload", .headers = nullptr,
                             .body = {}, .body_stream = &body};
    auto b = co_await UpstreamExchange::Start(pool, streamed, UpstreamTimeouts{});
    if (b.ok()) {
      EXPECT_EQ((*b)->head().status, 413);
    }  // else the server closed before the client finished writing: also a refusal
  });
  EXPECT_EQ(seen.code(), absl::StatusCode::kOutOfRange);
}

TEST_F(HttpClientTest, ReadAllRefusesBodiesOverTheLimit) {
  const uint16_t port = Serve([&](HttpRequest&, ResponseWriter& writer) -> Task<void> {
    ResponseHead head;
    std::string body(1000, 'x');
    co_await writer.Reply(head, std::move(body));
  });
  Run([&]() -> Task<void> {
    UpstreamPool pool(io_.get_executor(), "127.0.0.1", port);
    auto x = co_await UpstreamExchange::Start(pool, UpstreamRequest{}, UpstreamTimeouts{});
    EXPECT_TRUE(x.ok());
    if (!x.ok()) co_return;
    auto body = co_await (*x)->ReadAll(999);
    EXPECT_EQ(body.status().code(), absl::StatusCode::kOutOfRange);
  });
}

}  // namespace
}  // namespace warmroute::net
