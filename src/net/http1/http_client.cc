#include "net/http1/http_client.h"

#include <arpa/inet.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <time.h>

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <span>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "net/http1/flat_buffer_view.h"
#include "net/socket/coarse_deadline.h"
#include "net/socket/drain_hint_read.h"
#include "net/socket/speculative_write.h"
#include "net/tls/tls_write.h"

namespace warmroute::net {

using namespace std::string_view_literals;
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

using Stream = beast::basic_stream<tcp, Executor, beast::unlimited_rate_policy>;
using TlsStream = beast::ssl_stream<Stream>;
using Resolver = asio::ip::basic_resolver<tcp, Executor>;

constexpr auto kTask = asio::as_tuple(asio::use_awaitable_t<Executor>{});
constexpr size_t kReadBufferBytes = 16 * 1024;
constexpr size_t kPieceBytes = 16 * 1024;
constexpr std::string_view kConnectFailedPayload = "warmroute.dev/connect-failed";

absl::Status ConnectError(const std::string& where, const beast::error_code& ec) {
  absl::Status status =
      ec == beast::error::timeout
          ? absl::DeadlineExceededError(absl::StrCat("connect to ", where, " timed out"))
          : absl::UnavailableError(absl::StrCat("connect to ", where, " failed: ", ec.message()));
  status.SetPayload(std::string(kConnectFailedPayload), absl::Cord("1"));
  return status;
}

// A TLS handshake failure: like a connect failure, nothing of the request was sent.
absl::Status HandshakeError(const std::string& where, const beast::error_code& ec, SSL* ssl) {
  if (ec == beast::error::timeout) {
    return ConnectError(where, ec);
  }
  std::string why = ec.message();
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) absl::StrAppend(&why, " (", X509_verify_cert_error_string(verify), ")");
  absl::Status status =
      absl::UnavailableError(absl::StrCat("TLS handshake with ", where, " failed: ", why));
  status.SetPayload(std::string(kConnectFailedPayload), absl::Cord("1"));
  return status;
}

// A connection that waited in the pool at least this long is probed before it is reused
// (TakeIdle). Under load connections come back to work far sooner, and no request pays for the
// probe; at lower rates a probe every 10 ms or more is nothing.
constexpr int64_t kProbeIdleAfterMs = 10;

// The monotonic clock in milliseconds at the kernel tick's resolution (a few ms), without a
// system call.
int64_t CoarseNowMs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return int64_t{now.tv_sec} * 1000 + now.tv_nsec / 1'000'000;
}

bool IsIpLiteral(const std::string& host) {
  unsigned char address[16];
  return inet_pton(AF_INET, host.c_str(), address) == 1 ||
         inet_pton(AF_INET6, host.c_str(), address) == 1;
}

// Whether Beast's prepare_payload would send Content-Length for a request of this method and an
// empty body (it does for POST, PUT and OPTIONS).
bool SendsZeroLength(std::string_view method) {
  return method == "POST" || method == "PUT" || method == "OPTIONS";
}

}  // namespace

// A pooled connection: plaintext (`plain`) or TLS (`tls`), exactly one of them.
struct UpstreamPool::Connection {
  Connection(Executor executor, TlsContext* context) {
    if (context != nullptr) {
      tls.emplace(executor, *context);
    } else {
      plain.emplace(executor);
    }
    deadline.emplace(tcp().socket());
    buffer.reserve(kReadBufferBytes);
  }
  // The TCP layer: timeouts and the socket.
  Stream& tcp() { return tls ? tls->next_layer() : *plain; }
  // op(stream) on the connection's stream; `op` returns the same awaitable for both kinds.
  template <typename Op>
  auto On(Op op) {
    return tls ? op(*tls) : op(*plain);
  }
  std::optional<Stream> plain;
  std::optional<TlsStream> tls;
  beast::flat_buffer buffer;
  // Where ReadSome puts body pieces; kept with the connection so that an exchange on a pooled
  // connection allocates nothing for it.
  std::unique_ptr<char[]> piece{new char[kPieceBytes]};
  std::string request_head;  // the request line and headers, rebuilt per request in place
  int64_t idle_since_ms = 0;  // CoarseNowMs() when it went back to the pool
  // The first-byte and idle-stream timeouts (connecting uses the stream's own timer). Declared
  // last: it goes before the socket it guards.
  std::optional<CoarseDeadline> deadline;
};

struct UpstreamPool::State {
  std::vector<std::unique_ptr<Connection>> idle;
  size_t max_idle = 0;
  bool closed = false;
  std::shared_ptr<TlsContext> tls;  // null: plaintext
  std::string tls_server_name;      // SNI and the verified name (TLS only)
  // Resolved once, again after a connect failure (the name may have moved).
  std::optional<Resolver::results_type> endpoints;
};

UpstreamPool::UpstreamPool(Executor executor, std::string host, uint16_t port, PoolOptions options)
    : executor_(executor),
      host_(std::move(host)),
      port_(port),
      options_(options),
      state_(std::make_shared<State>()) {
  state_->max_idle = options_.max_idle;
  state_->tls = options_.tls;
  state_->tls_server_name = options_.tls_server_name.empty() ? host_ : options_.tls_server_name;
}

UpstreamPool::~UpstreamPool() {
  CloseIdle();
  state_->closed = true;
}

size_t UpstreamPool::idle_connections() const { return state_->idle.size(); }

void UpstreamPool::CloseIdle() {
  for (auto& c : state_->idle) {
    beast::error_code ec;
    c->tcp().socket().close(ec);
  }
  state_->idle.clear();
}

UpstreamExchange::UpstreamExchange() = default;

UpstreamExchange::~UpstreamExchange() {
  if (!connection_) return;
  const bool reusable = done_ && !failed_ && parser_ && parser_->keep_alive() &&
                        connection_->buffer.size() == 0 && !state_->closed &&
                        state_->idle.size() < state_->max_idle;
  if (reusable) {
    connection_->deadline->Disarm();
    connection_->idle_since_ms = CoarseNowMs();
    state_->idle.push_back(std::move(connection_));
  } else {
    beast::error_code ec;
    connection_->tcp().socket().shutdown(tcp::socket::shutdown_both, ec);
    connection_->tcp().socket().close(ec);
  }
}

bool UpstreamExchange::done() const { return done_; }

bool ConnectFailed(const absl::Status& status) {
  return status.GetPayload(std::string(kConnectFailedPayload)).has_value();
}

namespace {

// Whether the upstream sent anything on `connection` while it was idle: bytes no request asked
// for, its close, or an error (a non-blocking peek). Reused, a connection with such bytes would
// hand them to the next request as its response (an HTTP server may send a 408 on its idle
// timeout), and each later request would get its predecessor's. Over TLS only a close or an
// error counts: a TLS 1.3 server may send session tickets on an idle connection, which only the
// TLS layer can tell from a response.
bool UpstreamSpokeWhileIdle(UpstreamPool::Connection& connection) {
  char byte;
  ssize_t n;
  do {
    n = ::recv(connection.tcp().socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
  return n == 0 || !connection.tls;
}

// The most recently used idle connection of the pool, or null. One that waited at least
// kProbeIdleAfterMs is probed first, and closed if its upstream spoke while it was idle; a
// fresher one is not (a peek would cost a system call per request under load). A connection the
// upstream closed while idle then fails before any response byte, and Start retries once on a
// new connection.
std::unique_ptr<UpstreamPool::Connection> TakeIdle(UpstreamPool::State& state) {
  while (!state.idle.empty()) {
    std::unique_ptr<UpstreamPool::Connection> c = std::move(state.idle.back());
    state.idle.pop_back();
    if (CoarseNowMs() - c->idle_since_ms < kProbeIdleAfterMs || !UpstreamSpokeWhileIdle(*c)) {
      return c;
    }
    beast::error_code ec;
    c->tcp().socket().close(ec);
  }
  return nullptr;
}

}  // namespace

size_t UpstreamPool::CloseStale() {
  std::vector<std::unique_ptr<Connection>>& idle = state_->idle;
  const size_t before = idle.size();
  const int64_t now = CoarseNowMs();
  std::erase_if(idle, [now](const std::unique_ptr<Connection>& c) {
    if (now - c->idle_since_ms < kProbeIdleAfterMs || !UpstreamSpokeWhileIdle(*c)) return false;
    beast::error_code ec;
    c->tcp().socket().close(ec);
    return true;
  });
  return before - idle.size();
}

namespace {

// Opens a new connection to the pool's upstream.
Task<absl::StatusOr<std::unique_ptr<UpstreamPool::Connection>>> Connect(
    Executor executor, UpstreamPool::State& state, const std::string& host, uint16_t port,
    std::chrono::milliseconds timeout) {
  const std::string where = absl::StrCat(host, ":", port);
  if (!state.endpoints) {
    Resolver resolver(executor);
    auto [ec, results] = co_await resolver.async_resolve(host, std::to_string(port),
                                                         tcp::resolver::numeric_service, kTask);
    if (ec || results.empty()) co_return ConnectError(where, ec);
    state.endpoints = std::move(results);
  }
  auto connection = std::make_unique<UpstreamPool::Connection>(executor, state.tls.get());
  Stream& stream = connection->tcp();
  stream.expires_after(timeout);
  auto [ec, endpoint] = co_await stream.async_connect(*state.endpoints, kTask);
  if (ec) {
    state.endpoints.reset();
    co_return ConnectError(where, ec);
  }
  beast::error_code ignored;
  stream.socket().set_option(tcp::no_delay(true), ignored);
  // Non-blocking for the speculative request writes (WriteRequest); set once, it costs an ioctl.
  stream.socket().non_blocking(true, ignored);
  // The reads of responses say when they drained the socket (ReadMore, drain_hint_read.h).
  if (!connection->tls) EnableDrainHints(stream.socket().native_handle());
  if (connection->tls) {
    // The handshake is part of connecting: within the same timeout, and a failure means that
    // nothing was sent.
    TlsStream& tls = *connection->tls;
    const std::string& name = state.tls_server_name;
    if (!IsIpLiteral(name)) SSL_set_tlsext_host_name(tls.native_handle(), name.c_str());
    tls.set_verify_callback(asio::ssl::host_name_verification(name));
    auto [hec] = co_await tls.async_handshake(asio::ssl::stream_base::client, kTask);
    if (hec) co_return HandshakeError(where, hec, tls.native_handle());
  }
  stream.expires_never();  // from here on the connection's CoarseDeadline guards its I/O
  co_return connection;
}


// The request line and headers, as Beast's serializer wrote them for a request<span_body> with
// keep_alive(true) and prepare_payload(): Content-Length whenever there is a body (and for an
// empty POST, PUT or OPTIONS).
void BuildRequestHead(std::string& out, const UpstreamRequest& request,
                      std::string_view host_header) {
  out.clear();
  out.append(request.method);
  out.push_back(' ');
  out.append(request.target);
  out.append(" HTTP/1.1\r\nHost: "sv);
  out.append(host_header);
  out.append("\r\n"sv);
  if (request.headers != nullptr) {
    for (const auto& [name, value] : *request.headers) {
      out.append(name);
      out.append(": "sv);
      out.append(value);
      out.append("\r\n"sv);
    }
  }
  if (request.body_stream != nullptr) {
    out.append("Transfer-Encoding: chunked\r\n"sv);
  } else if (!request.body.empty() || SendsZeroLength(request.method)) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, request.body.size()).ptr;
    out.append("Content-Length: "sv);
    out.append(digits, static_cast<size_t>(end - digits));
    out.append("\r\n"sv);
  }
  out.append("Connection: keep-alive\r\n\r\n"sv);
}

// Writes the request (connection.request_head, then `body`). Plaintext: first one non-blocking
// writev, which a healthy connection takes whole (no reactor round trip); what it did not take
// is written asynchronously. TLS: asynchronously (net/tls/tls_write.h). The caller's deadline
// covers it.
Task<beast::error_code> WriteRequest(UpstreamPool::Connection& connection, std::string_view body) {
  const std::array<asio::const_buffer, 2> buffers = {asio::buffer(connection.request_head),
                                                     asio::buffer(body.data(), body.size())};
  if (connection.tls) co_return co_await WriteTls(*connection.tls, buffers);
  beast::error_code ec;
  const auto rest = WriteWhatFits(connection.plain->socket(), buffers, ec);
  if (ec || beast::buffer_bytes(rest) == 0) co_return ec;
  auto [wec, n] = co_await asio::async_write(*connection.plain, rest, kTask);
  co_return wec;
}

// Sends `request`'s streamed body after its head: `request.body` as the first chunk, then each
// piece its body_stream gives, chunk-framed, then the last chunk. Each write is bounded by
// `idle`. Returns the client's body error as it came (the request cannot be sent whole), or
// Unavailable/DeadlineExceeded naming `where` for the upstream's.
Task<absl::Status> WriteStreamedBody(UpstreamPool::Connection& connection,
                                     const UpstreamRequest& request, std::chrono::milliseconds idle,
                                     const std::string& where) {
  std::string frame;
  std::string_view piece = request.body;
  for (;;) {
    if (piece.empty()) {
      absl::StatusOr<std::string_view> next = co_await request.body_stream->ReadSome();
      if (!next.ok()) co_return next.status();
      piece = *next;
    }
    frame.clear();
    if (piece.empty()) {
      frame.append("0\r\n\r\n"sv);
    } else {
      char size[20];
      const auto end = std::to_chars(size, size + sizeof size, piece.size(), 16).ptr;
      frame.append(size, static_cast<size_t>(end - size));
      frame.append("\r\n"sv);
    }
    const std::array<asio::const_buffer, 3> buffers = {
        asio::buffer(frame), asio::buffer(piece.data(), piece.size()),
        asio::buffer(piece.empty() ? std::string_view() : "\r\n"sv)};
    connection.deadline->Arm(idle);
    beast::error_code ec;
    if (connection.tls) {
      ec = co_await WriteTls(*connection.tls, buffers);
    } else {
      auto [wec, n] = co_await asio::async_write(*connection.plain, buffers, kTask);
      ec = wec;
    }
    connection.deadline->Disarm();
    if (ec) {
      if (connection.deadline->TimedOut(ec)) {
        co_return absl::DeadlineExceededError(absl::StrCat("sending to ", where, " timed out"));
      }
      co_return absl::UnavailableError(
          absl::StrCat("sending the request body to ", where, " failed: ", ec.message()));
    }
    if (piece.empty()) co_return absl::OkStatus();
    piece = {};
  }
}

// One read of what the upstream sends next, into `buffer`, with a drain hint on a plaintext
// connection (drain_hint_read.h): the read after it waits for data instead of first trying a recv
// that finds nothing.
auto ReadMore(UpstreamPool::Connection& connection, beast::flat_buffer& buffer) {
  return connection.On([&buffer](auto& s) {
    return ReadSomeWithDrainHint(s, buffer.prepare(kReadBufferBytes), kTask);
  });
}

// Reads until `parser` has the response head: what the connection has buffered is parsed first,
// then each read's bytes as they come. `bytes_read` counts what was read from the socket.
// Returns the parser's error, or kPartialMessage when the upstream closed first (with
// `bytes_read` 0 and nothing buffered: it closed before sending anything), or the read's error
// in `ec`.
Task<Http1ResponseParser::Error> ReadHead(UpstreamPool::Connection& connection,
                                          Http1ResponseParser& parser, size_t& bytes_read,
                                          beast::error_code& ec) {
  beast::flat_buffer& buffer = connection.buffer;
  for (;;) {
    if (buffer.size() > 0) {
      Http1ResponseParser::Error error;
      size_t no_room = 0;
      const size_t used = parser.Put(BufferView(buffer), nullptr, 0, no_room, error);
      buffer.consume(used);
      if (error != Http1ResponseParser::Error::kNone) co_return error;
      if (parser.head_done()) co_return error;
    }
    auto read = ReadMore(connection, buffer);
    auto [rec, n] = co_await std::move(read);
    buffer.commit(n);
    bytes_read += n;
    const bool closed = rec == asio::error::eof || rec == asio::ssl::error::stream_truncated;
    if (closed && n > 0) continue;  // parse what came with the close; the next read says eof
    if (closed) {
      co_return Http1ResponseParser::Error::kPartialMessage;
    }
    if (rec) {
      ec = rec;
      co_return Http1ResponseParser::Error::kNone;
    }
  }
}

}  // namespace

Task<absl::StatusOr<std::unique_ptr<UpstreamExchange>>> UpstreamExchange::Start(
    UpstreamPool& pool, const UpstreamRequest& request, const UpstreamTimeouts& timeouts) {
  // Copies of the pool's parts: the pool itself may be destroyed while this runs (its backend
  // removed), and the shared State outlives it.
  const std::shared_ptr<UpstreamPool::State> state = pool.state_;
  const Executor executor = pool.executor_;
  const std::string host = pool.host();
  const uint16_t port = pool.port();
  const std::string where = absl::StrCat(host, ":", port);

  for (int attempt = 0;; ++attempt) {
    // (Destroyed on a failed attempt, it closes its connection.)
    std::unique_ptr<UpstreamExchange> x(new UpstreamExchange());
    x->state_ = state;
    x->timeouts_ = timeouts;
    // Take an idle connection, else open one.
    x->connection_ = TakeIdle(*state);
    const bool reused = x->connection_ != nullptr;
    if (!reused) {
      auto connection = co_await Connect(executor, *state, host, port, timeouts.connect);
      if (!connection.ok()) co_return connection.status();
      x->connection_ = std::move(*connection);
    }
    UpstreamPool::Connection& connection = *x->connection_;
    // A reused connection that fails before any response byte was closed by the upstream while
    // idle (a race the peek cannot exclude): try once more on a new connection.
    const bool may_retry = reused && attempt == 0;

    connection.deadline->Arm(timeouts.first_byte);  // the write and the response head
    BuildRequestHead(connection.request_head, request, where);
    const bool streamed = request.body_stream != nullptr;
    const beast::error_code wec =
        co_await WriteRequest(connection, streamed ? std::string_view() : request.body);
    if (wec) {
      connection.deadline->Disarm();
      x->failed_ = true;
      if (may_retry) continue;
      if (connection.deadline->TimedOut(wec)) {
        co_return absl::DeadlineExceededError(absl::StrCat("sending to ", where, " timed out"));
      }
      co_return absl::UnavailableError(
          absl::StrCat("sending the request to ", where, " failed: ", wec.message()));
    }
    if (streamed) {
      connection.deadline->Disarm();
      absl::Status sent =
          co_await WriteStreamedBody(connection, request, timeouts.idle_stream, where);
      if (!sent.ok()) {
        x->failed_ = true;
        co_return sent;
      }
      connection.deadline->Arm(timeouts.first_byte);  // the response head
    }
    x->parser_.emplace();
    if (request.method == "HEAD") x->parser_->SkipBody();
    size_t head_bytes = 0;
    beast::error_code rec;
    const Http1ResponseParser::Error error =
        co_await ReadHead(connection, *x->parser_, head_bytes, rec);
    connection.deadline->Disarm();
    if (rec || error != Http1ResponseParser::Error::kNone) {
      x->failed_ = true;
      const bool timed_out = connection.deadline->TimedOut(rec);
      const bool nothing_read = head_bytes == 0 && connection.buffer.size() == 0;
      if (may_retry && nothing_read && !timed_out && !streamed) continue;  // body is spent
      if (timed_out) {
        co_return absl::DeadlineExceededError(absl::StrCat("no response from ", where, " within ",
                                                           timeouts.first_byte.count(), " ms"));
      }
      const std::string why = rec            ? rec.message()
                              : nothing_read ? std::string("closed without a response")
                                             : std::string(Http1ResponseParser::Describe(error));
      co_return absl::UnavailableError(
          absl::StrCat("reading the response head from ", where, " failed: ", why));
    }
    x->head_ = std::move(x->parser_->head);
    if (x->parser_->done()) x->done_ = true;
    co_return x;
  }
}

Task<absl::StatusOr<std::string_view>> UpstreamExchange::ReadSome() {
  if (done_) co_return std::string_view();
  if (failed_) co_return absl::UnavailableError("the upstream response already failed");
  UpstreamPool::Connection& connection = *connection_;
  beast::flat_buffer& buffer = connection.buffer;
  char* const piece = connection.piece.get();
  // What is already buffered is parsed without I/O (and without arming the idle timer): a
  // non-streaming body usually arrives with its head. Then a read at a time until the parser
  // has body bytes or the message is done.
  for (;;) {
    if (buffer.size() > 0) {
      size_t got = 0;
      Http1ResponseParser::Error error;
      const size_t used = parser_->Put(BufferView(buffer), piece, kPieceBytes, got, error);
      buffer.consume(used);
      if (error != Http1ResponseParser::Error::kNone) {
        failed_ = true;
        co_return absl::UnavailableError(absl::StrCat(
            "malformed upstream response body: ", AbslView(Http1ResponseParser::Describe(error))));
      }
      if (parser_->done()) done_ = true;
      if (got > 0) co_return std::string_view(piece, got);
      if (done_) co_return std::string_view();
    }
    connection.deadline->Arm(timeouts_.idle_stream);
    auto read = ReadMore(connection, buffer);
    auto [ec, n] = co_await std::move(read);
    connection.deadline->Disarm();
    buffer.commit(n);
    const bool closed = ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
    if (closed && n > 0) continue;  // parse what came with the close; the next read says eof
    if (closed) {
      if (parser_->PutEof() == Http1ResponseParser::Error::kNone) {
        done_ = true;  // a body that ran to the close
        co_return std::string_view();
      }
      failed_ = true;
      co_return absl::UnavailableError(
          "reading the upstream response failed: the connection closed mid-response");
    }
    if (ec) {
      failed_ = true;
      if (connection.deadline->TimedOut(ec)) {
        co_return absl::DeadlineExceededError(
            absl::StrCat("the upstream sent nothing for ", timeouts_.idle_stream.count(), " ms"));
      }
      co_return absl::UnavailableError(
          absl::StrCat("reading the upstream response failed: ", ec.message()));
    }
  }
}

Task<absl::StatusOr<std::string>> UpstreamExchange::ReadAll(size_t limit) {
  std::string all;
  for (;;) {
    absl::StatusOr<std::string_view> piece = co_await ReadSome();
    if (!piece.ok()) co_return piece.status();
    if (piece->empty()) co_return all;
    if (all.size() + piece->size() > limit) {
      failed_ = true;
      co_return absl::OutOfRangeError(
          absl::StrCat("the upstream response exceeds ", limit, " bytes"));
    }
    all.append(*piece);
  }
}

}  // namespace warmroute::net
