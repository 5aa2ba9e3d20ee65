#include "net/http1/http_server.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cstdio>
#include <exception>
#include <type_traits>
#include <unordered_set>
#include <utility>

#include "net/detached.h"
#include "net/http1/body_reader.h"
#include "net/http1/flat_buffer_view.h"
#include "net/http1/request_parser.h"
#include "net/socket/coarse_deadline.h"
#include "net/socket/drain_hint_read.h"
#include "net/socket/speculative_write.h"
#include "net/tls/tls_write.h"

namespace warmroute::net {

using namespace std::string_view_literals;
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

using Stream = beast::basic_stream<tcp, Executor, beast::unlimited_rate_policy>;
using Socket = Stream::socket_type;
// A TLS connection (written through net/tls/tls_write.h).
using TlsStream = beast::ssl_stream<Stream>;
using Acceptor = asio::basic_socket_acceptor<tcp, Executor>;
using Timer = asio::basic_waitable_timer<std::chrono::steady_clock,
                                         asio::wait_traits<std::chrono::steady_clock>, Executor>;

constexpr auto kTask = asio::as_tuple(asio::use_awaitable_t<Executor>{});
constexpr size_t kReadBufferBytes = 16 * 1024;
// A connection closed after an error response first drains what the client is still sending
// (else the kernel answers the unread bytes with a RST and the client may never read the
// response), for at most this long and this many bytes.
constexpr auto kDrainTimeout = std::chrono::seconds(2);
constexpr size_t kDrainLimitBytes = size_t{256} << 20;
// How long a request runs before the server starts watching its client for a close (see
// Impl::Watch): the bound on noticing a client that left mid-request.
constexpr auto kWatchDelay = std::chrono::milliseconds(20);

absl::Status ClientGone(const beast::error_code& ec) {
  return absl::UnavailableError("client connection failed: " + ec.message());
}

// The TCP layer of a connection: it carries the timeouts and the socket.
Stream& TcpOf(Stream& stream) { return stream; }
Stream& TcpOf(TlsStream& stream) { return stream.next_layer(); }

template <typename S>
constexpr bool kIsTls = std::is_same_v<S, TlsStream>;

// Response heads are written by hand (status line, Content-Type, the handler's headers, then
// Content-Length or Transfer-Encoding and Connection). On a plaintext connection every write is
// first tried as one non-blocking writev: on a healthy connection the kernel takes it at once, so
// no timer is armed and no reactor round trip happens. Only what the kernel did not take is
// written asynchronously, under write_timeout. On a TLS connection each write is asynchronous,
// under write_timeout, and one TLS record when it fits in one (net/tls/tls_write.h).
template <typename S>
class ConnectionWriter final : public ResponseWriter {
 public:
  // `head_buffer`: where response heads are built; the connection keeps it from one request to
  // the next, so a head costs no allocation.
  // `draining`: when set by the time a head is written, the head says Connection: close (the
  // connection closes after this response).
  // The request decides the framing: a HEAD request's response has no body (its head says what
  // GET's would), and an HTTP/1.0 client, which knows no chunked coding, gets a stream's body
  // as it is, ended by closing the connection.
  ConnectionWriter(S& stream, const HttpRequest& request, std::chrono::milliseconds write_timeout,
                   std::string& head_buffer, const bool& draining)
      : stream_(stream),
        keep_alive_(request.keep_alive),
        http10_(request.http10),
        head_only_(request.method == "HEAD"),
        write_timeout_(write_timeout),
        head_buffer_(head_buffer),
        draining_(draining) {}

  Task<absl::Status> Reply(ResponseHead head, std::string body) override {
    started_ = true;
    const std::string& text = Head(head, /*chunked=*/false, body.size());
    const bool no_body = head_only_ || !HasBody(head.status);
    std::array<asio::const_buffer, 2> buffers = {
        asio::buffer(text), no_body ? asio::const_buffer() : asio::buffer(body)};
    co_return co_await Write(buffers);
  }

  Task<absl::Status> StartStream(ResponseHead head) override {
    started_ = true;
    streaming_ = true;
    closes_ = http10_;  // the close ends the body
    const std::string& text = Head(head, /*chunked=*/!http10_, 0);
    std::array<asio::const_buffer, 1> buffers = {asio::buffer(text)};
    co_return co_await Write(buffers);
  }

  Task<absl::Status> WriteChunk(std::string_view data) override {
    if (failed_) co_return absl::UnavailableError("client connection failed");
    // Never an empty chunk: "0\r\n\r\n" would end the stream.
    if (data.empty() || head_only_) co_return absl::OkStatus();
    if (http10_) {
      std::array<asio::const_buffer, 1> buffers = {asio::buffer(data.data(), data.size())};
      co_return co_await Write(buffers);
    }
    char size[24];
    const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    std::array<asio::const_buffer, 3> buffers = {asio::buffer(size, static_cast<size_t>(n)),
                                                 asio::buffer(data.data(), data.size()),
                                                 asio::buffer("\r\n", 2)};
    co_return co_await Write(buffers);
  }

  Task<absl::Status> FinishStream() override {
    if (failed_) co_return absl::UnavailableError("client connection failed");
    finished_ = true;
    if (head_only_ || http10_) co_return absl::OkStatus();
    std::array<asio::const_buffer, 1> buffers = {asio::buffer("0\r\n\r\n", 5)};
    co_return co_await Write(buffers);
  }

  bool started() const override { return started_; }

  void Abort() override {
    failed_ = true;
    beast::error_code ec;
    TcpOf(stream_).socket().shutdown(tcp::socket::shutdown_both, ec);
  }

  bool streaming() const { return streaming_; }
  bool finished() const { return finished_; }
  bool failed() const { return failed_; }
  // The response's end is the connection's: the server closes it after this response.
  bool closes_connection() const { return closes_; }

 private:
  // 1xx, 204 and 304 responses have no body, and no Content-Length (RFC 9110 8.6).
  static bool HasBody(int status) { return status >= 200 && status != 204 && status != 304; }

  // The head, in head_buffer_ (valid until the next Head).
  const std::string& Head(const ResponseHead& head, bool chunked, size_t content_length) {
    std::string& text = head_buffer_;
    text.clear();
    text.reserve(160);
    const auto reason = http::obsolete_reason(static_cast<http::status>(head.status));
    text.append("HTTP/1.1 "sv);
    text.append(std::to_string(head.status));
    text.push_back(' ');
    text.append(reason.data(), reason.size());
    text.append("\r\n"sv);
    if (!head.content_type.empty()) {
      text.append("Content-Type: "sv);
      text.append(head.content_type);
      text.append("\r\n"sv);
    }
    for (const auto& [name, value] : head.headers) {
      text.append(name);
      text.append(": "sv);
      text.append(value);
      text.append("\r\n"sv);
    }
    if (chunked) {
      text.append("Transfer-Encoding: chunked\r\n"sv);
    } else if (HasBody(head.status) && !closes_) {
      text.append("Content-Length: "sv);
      text.append(std::to_string(content_length));
      text.append("\r\n"sv);
    }
    text.append(keep_alive_ && !closes_ && !draining_ ? "Connection: keep-alive\r\n\r\n"
                                                      : "Connection: close\r\n\r\n");
    return text;
  }

  // Writes every byte of `buffers`: on plaintext first one non-blocking attempt, then
  // asynchronously.
  template <typename Buffers>
  Task<absl::Status> Write(const Buffers& buffers) {
    if (failed_) co_return absl::UnavailableError("client connection failed");
    if constexpr (kIsTls<S>) {
      TcpOf(stream_).expires_after(write_timeout_);
      const beast::error_code wec = co_await WriteTls(stream_, buffers);
      TcpOf(stream_).expires_never();
      co_return Done(wec);
    } else {
      // The socket is in non-blocking mode (ServeConnection): this never waits.
      beast::error_code ec;
      const auto rest = WriteWhatFits(stream_.socket(), buffers, ec);
      if (ec) co_return Done(ec);
      if (beast::buffer_bytes(rest) == 0) co_return absl::OkStatus();
      stream_.expires_after(write_timeout_);
      auto [wec, n] = co_await asio::async_write(stream_, rest, kTask);
      stream_.expires_never();
      co_return Done(wec);
    }
  }

  absl::Status Done(const beast::error_code& ec) {
    if (!ec) return absl::OkStatus();
    failed_ = true;
    return ClientGone(ec);
  }

  S& stream_;
  const bool keep_alive_;
  const bool http10_;
  const bool head_only_;
  const std::chrono::milliseconds write_timeout_;
  std::string& head_buffer_;
  const bool& draining_;
  bool started_ = false;
  bool streaming_ = false;
  bool finished_ = false;
  bool failed_ = false;
  bool closes_ = false;
};

// Parses what `buffer` holds into `parser`, consuming what it used.
Http1RequestParser::Error Feed(Http1RequestParser& parser, beast::flat_buffer& buffer) {
  Http1RequestParser::Error error;
  buffer.consume(parser.Put(BufferView(buffer), error));
  return error;
}

// The body of a request whose head `parser` has, read from `stream` as the handler asks for it
// (HttpServerOptions::stream_body). The parser decodes into request.body, which is swapped with
// this reader's own buffer around each feed: the handler's request.body is its own to use, and at
// most about one read buffer of the body is held.
template <typename S>
class StreamedBody final : public BodyReader {
 public:
  StreamedBody(S& stream, beast::flat_buffer& buffer, Http1RequestParser& parser,
               std::chrono::milliseconds timeout, std::chrono::milliseconds write_timeout)
      : stream_(stream),
        buffer_(buffer),
        parser_(parser),
        timeout_(timeout),
        write_timeout_(write_timeout),
        send_continue_(parser.expects_continue()) {
    first_.swap(parser.request.body);  // decoded with the head: the handler sees `body` empty
  }

  Task<absl::StatusOr<std::string_view>> ReadSome() override {
    if (!first_.empty()) {
      piece_.swap(first_);
      first_.clear();
      co_return std::string_view(piece_);
    }
    for (;;) {
      if (!decoded_.empty()) {
        piece_.swap(decoded_);
        decoded_.clear();
        co_return std::string_view(piece_);
      }
      if (parser_.done()) co_return std::string_view();
      if (!failure_.ok()) co_return failure_;
      if (send_continue_) {  // the client waits for it before it sends the body
        send_continue_ = false;
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        TcpOf(stream_).expires_after(write_timeout_);
        auto [wec, wn] = co_await asio::async_write(
            stream_, asio::buffer(kContinue.data(), kContinue.size()), kTask);
        TcpOf(stream_).expires_never();
        if (wec) {
          failure_ = ClientGone(wec);
          co_return failure_;
        }
      }
      TcpOf(stream_).expires_after(timeout_);
      auto [ec, n] = co_await stream_.async_read_some(buffer_.prepare(kReadBufferBytes), kTask);
      TcpOf(stream_).expires_never();
      buffer_.commit(n);
      if (n > 0) {
        parser_.request.body.swap(decoded_);  // the parser writes into request.body
        const Http1RequestParser::Error error = Feed(parser_, buffer_);
        parser_.request.body.swap(decoded_);
        if (error == Http1RequestParser::Error::kBodyTooLarge) {
          failure_ = absl::OutOfRangeError("the request body is over the limit");
          co_return failure_;
        }
        if (error != Http1RequestParser::Error::kNone) {
          failure_ = absl::InvalidArgumentError("malformed request body: " +
                                                std::string(Http1RequestParser::Describe(error)));
          co_return failure_;
        }
      }
      if (ec && decoded_.empty() && !parser_.done()) {
        failure_ = ClientGone(ec);
        co_return failure_;
      }
    }
  }

  bool done() const override { return first_.empty() && parser_.done() && decoded_.empty(); }

 private:
  S& stream_;
  beast::flat_buffer& buffer_;
  Http1RequestParser& parser_;
  const std::chrono::milliseconds timeout_;
  const std::chrono::milliseconds write_timeout_;
  bool send_continue_;
  std::string first_;    // what came with the head, handed out first
  std::string decoded_;  // decoded since, not handed out yet
  std::string piece_;
  absl::Status failure_ = absl::OkStatus();
};

}  // namespace

class HttpServer::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(asio::io_context& io, HttpServerOptions options, HttpHandler handler)
      : options_(std::move(options)),
        handler_(std::move(handler)),
        acceptor_(io.get_executor()),
        watch_ticker_(io.get_executor()) {}

  absl::Status Listen() {
    beast::error_code ec;
    tcp::resolver resolver(acceptor_.get_executor().context());
    auto results = resolver.resolve(options_.host, std::to_string(options_.port),
                                    tcp::resolver::passive | tcp::resolver::numeric_service, ec);
    if (ec || results.empty()) {
      return absl::UnavailableError("cannot resolve host '" + options_.host + "': " + ec.message());
    }
    const tcp::endpoint endpoint = results.begin()->endpoint();
    if (acceptor_.open(endpoint.protocol(), ec) ||
        acceptor_.set_option(asio::socket_base::reuse_address(true), ec) ||
        (options_.reuse_port &&
         acceptor_.set_option(asio::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>(true),
                              ec)) ||
        acceptor_.bind(endpoint, ec) ||
        acceptor_.listen(asio::socket_base::max_listen_connections, ec)) {
      return absl::UnavailableError("cannot listen on " + options_.host + ":" +
                                    std::to_string(options_.port) + ": " + ec.message());
    }
    port_ = acceptor_.local_endpoint(ec).port();
    return absl::OkStatus();
  }

  void Start() {
    asio::co_spawn(acceptor_.get_executor(), AcceptLoop(shared_from_this()),
                   [](std::exception_ptr e) { LogIfDetachedFailed("accept loop", e); });
  }

  void Stop() {
    if (stopped_) return;
    stopped_ = true;
    watch_ticker_.cancel();
    beast::error_code ec;
    acceptor_.close(ec);
    for (Connection* c : connections_) c->stream->close();
  }

  void Drain() {
    if (stopped_ || draining_) return;
    draining_ = true;
    beast::error_code ec;
    acceptor_.close(ec);
    for (Connection* c : connections_) {
      if (c->idle) c->stream->close();
    }
  }

  size_t open_connections() const { return open_.load(std::memory_order_relaxed); }

  uint16_t port() const { return port_; }
  const std::string& host() const { return options_.host; }

 private:
  static Task<void> AcceptLoop(std::shared_ptr<Impl> self) {
    while (!self->stopped_) {
      auto [ec, socket] = co_await self->acceptor_.async_accept(kTask);
      if (self->stopped_ || self->draining_) co_return;
      if (ec) {
        spdlog::warn("accept failed: {}", ec.message());
        // E.g. out of file descriptors: back off instead of spinning.
        Timer backoff(self->acceptor_.get_executor(), std::chrono::milliseconds(50));
        co_await backoff.async_wait(kTask);
        continue;
      }
      auto watch = std::make_shared<Watch>();
      auto done = asio::bind_cancellation_slot(
          watch->cancel.slot(), [](std::exception_ptr e) { LogIfDetachedFailed("connection", e); });
      if (self->options_.tls) {
        asio::co_spawn(self->acceptor_.get_executor(),
                       ServeConnection<TlsStream>(self, std::move(socket), watch), std::move(done));
      } else {
        asio::co_spawn(self->acceptor_.get_executor(),
                       ServeConnection<Stream>(self, std::move(socket), watch), std::move(done));
      }
    }
  }

  // Watching a client while its handler runs. A client that closes its connection mid-request
  // (orderly close or reset) cancels the handler: ServeConnection runs under Watch::cancel's
  // slot, so the emitted cancellation aborts whatever the handler awaits (e.g. the upstream
  // read, whose exchange then closes the upstream connection) and its next co_await throws.
  //
  // Watching starts late: a request joins `waiting_` when it starts, and at the next tick of
  // this server's ticker (at most kWatchDelay later) each request still running gets a receive
  // that peeks at one byte. Starting a watch costs a system call (the receive is tried at once)
  // and most requests are answered before the tick, so they never pay it; a client that leaves
  // is noticed within kWatchDelay. (A receive, not socket.async_wait(wait_read): Asio starts a
  // wait by re-arming the socket in epoll, one epoll_ctl, where a receive is queued on the
  // registration the socket already has once the try found nothing.) A request that ends
  // cancels its pending receive (no system call).
  //
  // What the peek finds: nothing (the client closed or reset) is a close. On TLS an alert record
  // (TLS 1.2's close_notify travels as one) is a close too. Any other byte is the start of a
  // pipelined request, or on TLS 1.3 of an encrypted record: there every alert, close_notify
  // included, looks like application data. A TLS 1.3 close_notify alone is not a close (it ends
  // only what the client sends; it may still read the response), but OpenSSL and Go clients send
  // it right before closing, and the FIN behind it is then invisible to a peek. So after such a
  // byte the watch goes on at every tick with a poll for the peer's FIN or reset (POLLRDHUP), one
  // system call per tick, until the request ends.
  struct Watch {
    asio::cancellation_signal cancel;  // bound to the connection's coroutine
    Socket* socket = nullptr;          // the connection's TCP socket
    bool tls = false;
    uint64_t request = 0;  // numbers the connection's requests: a late completion is ignored
    bool in_request = false;
    bool receiving = false;  // the peek is pending
    bool polling = false;    // the peek found bytes: poll for the FIN behind them at each tick
    bool client_left = false;
    char byte = 0;
  };

  // A request starts on `watch`'s connection; EndWatch when it ends. `pipelined`: the client has
  // sent bytes after it already (nothing to peek at: poll from the first tick).
  void BeginWatch(const std::shared_ptr<Watch>& watch, bool pipelined) {
    ++watch->request;
    watch->in_request = true;
    watch->polling = pipelined;
    Enqueue(watch);
  }

  // `watch` is looked at again at the next tick.
  void Enqueue(const std::shared_ptr<Watch>& watch) {
    waiting_.emplace_back(watch, watch->request);
    if (!ticking_) {
      ticking_ = true;
      asio::co_spawn(acceptor_.get_executor(), WatchTicker(shared_from_this()),
                     [](std::exception_ptr e) { LogIfDetachedFailed("watch ticker", e); });
    }
  }

  static void EndWatch(Watch& watch) {
    watch.in_request = false;
    if (watch.receiving) {
      watch.receiving = false;
      beast::error_code ec;
      watch.socket->cancel(ec);  // the peek; nothing else is pending on the socket now
    }
  }

  static void StartReceive(const std::shared_ptr<Impl>& self, const std::shared_ptr<Watch>& watch) {
    watch->receiving = true;
    const uint64_t request = watch->request;
    watch->socket->async_receive(
        asio::buffer(&watch->byte, 1), Socket::message_peek,
        [self, watch, request](const beast::error_code& ec, size_t n) {
          if (watch->request != request || !watch->in_request) return;  // that request ended
          watch->receiving = false;
          if (ec == asio::error::operation_aborted) return;
          constexpr char kTlsAlertRecord = 21;
          const bool closed = ec || n == 0 || (watch->tls && watch->byte == kTlsAlertRecord);
          if (closed) {
            ClientLeft(*watch);
            return;
          }
          // A pipelined request (read after this response) or a TLS 1.3 record: watch for the
          // FIN behind it.
          watch->polling = true;
          if (!self->stopped_) self->Enqueue(watch);
        });
  }

  // True when the peer has closed or reset the connection, whatever unread bytes precede that.
  static bool PeerClosed(Socket& socket) {
    pollfd p{.fd = socket.native_handle(), .events = POLLRDHUP, .revents = 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
  }

  static void ClientLeft(Watch& watch) {
    watch.client_left = true;
    watch.cancel.emit(asio::cancellation_type::terminal);
  }

  // Every kWatchDelay while requests wait for their watch: starts the watch of those still
  // running, and polls those whose client sent bytes during the request.
  static Task<void> WatchTicker(std::shared_ptr<Impl> self) {
    std::vector<std::pair<std::shared_ptr<Watch>, uint64_t>> due;
    while (!self->waiting_.empty() && !self->stopped_) {
      self->watch_ticker_.expires_after(kWatchDelay);
      co_await self->watch_ticker_.async_wait(kTask);
      if (self->stopped_) break;
      due.swap(self->waiting_);
      for (auto& [watch, request] : due) {
        if (watch->request != request || !watch->in_request || watch->client_left) continue;
        if (watch->polling) {
          if (PeerClosed(*watch->socket)) {
            ClientLeft(*watch);
          } else {
            self->waiting_.emplace_back(watch, request);
          }
        } else if (!watch->receiving) {
          StartReceive(self, watch);
        }
      }
      due.clear();
    }
    self->waiting_.clear();
    self->ticking_ = false;
  }

  // Runs the handler; a handler's exception is logged and ends only this request.
  static Task<void> RunHandler(std::shared_ptr<Impl> self, HttpRequest& request,
                               ResponseWriter& writer) {
    try {
      co_await self->handler_(request, writer);
    } catch (const boost::system::system_error& e) {
      if (e.code() != asio::error::operation_aborted) {
        spdlog::error("handler failed: {}", e.what());
      }
    } catch (const std::exception& e) {
      spdlog::error("handler failed: {}", e.what());
    }
  }

  // Sends `response` (a refusal of the request) and closes the connection gracefully.
  template <typename S>
  static Task<void> ReplyAndClose(std::shared_ptr<Impl> self, S& stream, Response response) {
    std::string head_buffer;
    static const HttpRequest kClosing = [] {
      HttpRequest request;
      request.keep_alive = false;
      return request;
    }();
    ConnectionWriter<S> writer(stream, kClosing, self->options_.write_timeout, head_buffer,
                               self->draining_);
    const absl::Status sent =
        co_await writer.Reply(std::move(response.head), std::move(response.body));
    if (!sent.ok()) co_return;
    beast::error_code ec;
    TcpOf(stream).socket().shutdown(tcp::socket::shutdown_send, ec);
    // Discard what the client still sends so that closing does not reset the connection.
    TcpOf(stream).expires_after(kDrainTimeout);
    std::vector<char> sink(kReadBufferBytes);
    size_t drained = 0;
    while (drained < kDrainLimitBytes) {
      auto [rec, n] = co_await stream.async_read_some(asio::buffer(sink), kTask);
      if (rec) break;
      drained += n;
    }
  }

  // Reads into `buffer` and parses until the parser has the request's head (`until_head`) or
  // the whole request, under the stream's current expiry. A read error (the client closed or
  // reset, the expiry passed) is returned in `ec`, a parse error as the result.
  template <typename S>
  static Task<Http1RequestParser::Error> ReadRequest(S& stream, beast::flat_buffer& buffer,
                                                     Http1RequestParser& parser, bool until_head,
                                                     beast::error_code& ec) {
    while (!(until_head ? parser.head_done() : parser.done())) {
      auto [rec, n] = co_await stream.async_read_some(buffer.prepare(kReadBufferBytes), kTask);
      buffer.commit(n);
      if (n > 0) {
        const Http1RequestParser::Error error = Feed(parser, buffer);
        if (error != Http1RequestParser::Error::kNone) co_return error;
      }
      if (rec && !(until_head ? parser.head_done() : parser.done())) {
        ec = rec;
        break;
      }
    }
    co_return Http1RequestParser::Error::kNone;
  }

  static Stream NewStream(Impl&, Socket socket, Stream*) { return Stream(std::move(socket)); }
  static TlsStream NewStream(Impl& self, Socket socket, TlsStream*) {
    return TlsStream(std::move(socket), *self.options_.tls);
  }

  // The TLS handshake, within header_timeout. False (logged at debug level) when it failed: a
  // plaintext client, no or a bad client certificate, an unsupported version, a timeout.
  static Task<bool> Handshake(TlsStream& stream, const HttpServerOptions& options) {
    beast::error_code ec;
    const tcp::endpoint peer = stream.next_layer().socket().remote_endpoint(ec);
    stream.next_layer().expires_after(options.header_timeout);
    auto [hec] = co_await stream.async_handshake(asio::ssl::stream_base::server, kTask);
    stream.next_layer().expires_never();
    if (!hec) co_return true;
    if (hec == beast::error::timeout) {
      spdlog::debug("TLS handshake with {}:{} timed out after {} ms", peer.address().to_string(),
                    peer.port(), options.header_timeout.count());
    } else {
      spdlog::debug("TLS handshake with {}:{} failed: {}", peer.address().to_string(), peer.port(),
                    hec.message());
    }
    co_return false;
  }

  // Serves a request whose body streams to the handler; the connection then closes (a keep-alive
  // next request would have to wait for the whole body to be consumed, which a handler that
  // refused the request never does).
  template <typename S>
  static Task<void> ServeStreamed(std::shared_ptr<Impl> self, S& stream,
                                  beast::flat_buffer& buffer, Http1RequestParser& parser,
                                  std::string& head_buffer, const std::shared_ptr<Watch>& watch) {
    const HttpServerOptions& options = self->options_;
    HttpRequest& request = parser.request;
    request.keep_alive = false;
    StreamedBody<S> body(stream, buffer, parser, options.body_timeout, options.write_timeout);
    request.body_reader = &body;
    ConnectionWriter<S> writer(stream, request, options.write_timeout, head_buffer,
                               self->draining_);
    // Polled for the client's FIN from the first tick: a peek would race the body's reads.
    self->BeginWatch(watch, /*pipelined=*/true);
    co_await RunHandler(self, request, writer);
    EndWatch(*watch);
    request.body_reader = nullptr;
    if (watch->client_left) co_return;  // the coroutine is cancelled: no further co_await
    if (writer.failed() || self->stopped_) co_return;
    if (!writer.started()) {
      spdlog::error("a request handler returned without a response");
      // A failure to write leaves nothing to do: the connection is shut down next either way.
      (void)co_await writer.ReplyError(absl::InternalError("the handler sent no response"));
    } else if (writer.streaming() && !writer.finished()) {
      (void)co_await writer.FinishStream();
    }
    beast::error_code ec;
    TcpOf(stream).socket().shutdown(tcp::socket::shutdown_send, ec);
  }

  template <typename S>
  static Task<void> ServeConnection(std::shared_ptr<Impl> self, Socket socket,
                                    std::shared_ptr<Watch> watch) {
    if (self->stopped_) co_return;
    S stream = NewStream(*self, std::move(socket), static_cast<S*>(nullptr));
    Stream& tcp_stream = TcpOf(stream);
    watch->socket = &tcp_stream.socket();
    watch->tls = kIsTls<S>;
    Connection connection{.stream = &tcp_stream};
    self->connections_.insert(&connection);
    self->open_.fetch_add(1, std::memory_order_relaxed);
    struct Unregister {
      Impl* impl;
      Connection* connection;
      ~Unregister() {
        impl->connections_.erase(connection);
        impl->open_.fetch_sub(1, std::memory_order_relaxed);
      }
    } unregister{self.get(), &connection};

    beast::error_code ec;
    tcp_stream.socket().set_option(tcp::no_delay(true), ec);
    if constexpr (kIsTls<S>) {
      const bool secured = co_await Handshake(stream, self->options_);
      if (!secured) co_return;
    } else {
      // Non-blocking for ConnectionWriter's speculative writes (set once: it costs an ioctl).
      tcp_stream.socket().non_blocking(true, ec);
      // The keep-alive read below says when it drained the socket (drain_hint_read.h): the next
      // one then waits for the client's request without first trying a recv that finds nothing.
      EnableDrainHints(tcp_stream.socket().native_handle());
    }
    beast::flat_buffer buffer;
    buffer.reserve(kReadBufferBytes);
    std::string head_buffer;  // response heads (ConnectionWriter)
    const HttpServerOptions& options = self->options_;
    // The keep-alive wait, on every request's path; the rarer waits for the rest of a request
    // use the stream's own timer.
    CoarseDeadline idle_deadline(tcp_stream.socket());
    // One parser for the connection's requests: each starts with Reset, in the memory the last
    // one's request took (the handler is done with it by then).
    Http1RequestParser parser(options.header_limit_bytes, options.body_limit_bytes);

    for (;;) {
      if (buffer.size() == 0) {  // keep-alive: wait for the next request
        if (self->draining_) co_return;
        idle_deadline.Arm(options.idle_timeout);
        connection.idle = true;  // Drain closes it
        auto [rec, n] =
            co_await ReadSomeWithDrainHint(stream, buffer.prepare(kReadBufferBytes), kTask);
        connection.idle = false;
        idle_deadline.Disarm();
        if (rec) co_return;  // closed, failed or timed out (or drained)
        buffer.commit(n);
      }
      parser.Reset();
      // Fast path: a request usually arrives whole in one read; parse what is buffered without
      // I/O (and without arming the header timer). The rest is read under the timeouts.
      Http1RequestParser::Error perr = Feed(parser, buffer);
      beast::error_code rec;
      if (perr == Http1RequestParser::Error::kNone && !parser.head_done()) {
        tcp_stream.expires_after(options.header_timeout);
        perr = co_await ReadRequest(stream, buffer, parser, /*until_head=*/true, rec);
      }
      // A body the handler reads as it arrives (HttpServerOptions::stream_body).
      const bool streamed = perr == Http1RequestParser::Error::kNone && !rec &&
                            !parser.done() && options.stream_body &&
                            options.stream_body(parser.request);
      if (streamed) {
        co_await ServeStreamed(self, stream, buffer, parser, head_buffer, watch);
        co_return;
      }
      if (perr == Http1RequestParser::Error::kNone && !rec && !parser.done()) {
        if (parser.expects_continue()) {
          tcp_stream.expires_after(options.write_timeout);
          static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
          auto [wec, wn] = co_await asio::async_write(
              stream, asio::buffer(kContinue.data(), kContinue.size()), kTask);
          if (wec) co_return;
        }
        tcp_stream.expires_after(options.body_timeout);
        perr = co_await ReadRequest(stream, buffer, parser, /*until_head=*/false, rec);
      }
      if (perr != Http1RequestParser::Error::kNone) {
        co_await ReplyAndClose(self, stream, parser.RefusalOf(perr));
        co_return;
      }
      if (rec) co_return;  // closed, reset or timed out mid-request
      tcp_stream.expires_never();
      HttpRequest& request = parser.request;
      const bool keep_alive = request.keep_alive;
      ConnectionWriter<S> writer(stream, request, options.write_timeout, head_buffer,
                                 self->draining_);
      // Watch the client while the handler runs: one that goes away cancels the handler.
      self->BeginWatch(watch, /*pipelined=*/buffer.size() > 0);
      co_await RunHandler(self, request, writer);
      EndWatch(*watch);
      if (watch->client_left) {  // the coroutine is cancelled: no further co_await
        spdlog::debug("client closed the connection during a request");
        co_return;
      }
      if (writer.failed() || self->stopped_) co_return;
      if (!writer.started()) {
        spdlog::error("a request handler returned without a response");
        // A failure to write is writer.failed(), checked below.
        (void)co_await writer.ReplyError(absl::InternalError("the handler sent no response"));
      } else if (writer.streaming() && !writer.finished()) {
        (void)co_await writer.FinishStream();
      }
      if (writer.failed()) co_return;
      if (!keep_alive || writer.closes_connection() || self->draining_) {
        tcp_stream.socket().shutdown(tcp::socket::shutdown_send, ec);
        co_return;
      }
    }
  }

  const HttpServerOptions options_;
  const HttpHandler handler_;
  Acceptor acceptor_;
  uint16_t port_ = 0;
  bool stopped_ = false;
  bool draining_ = false;  // Drain was called: no new connections or requests
  // An open connection: its TCP stream, and whether it waits for its next request.
  struct Connection {
    Stream* stream;
    bool idle = false;
  };
  std::unordered_set<Connection*> connections_;
  std::atomic<size_t> open_{0};  // connections_.size(), for other threads
  Timer watch_ticker_;
  // Requests (their connection's watch and number) that started since the last tick.
  std::vector<std::pair<std::shared_ptr<Watch>, uint64_t>> waiting_;
  bool ticking_ = false;
};

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Create(asio::io_context& io,
                                                               HttpServerOptions options,
                                                               HttpHandler handler) {
  auto impl = std::make_shared<Impl>(io, std::move(options), std::move(handler));
  absl::Status listening = impl->Listen();
  if (!listening.ok()) return listening;
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { impl_->Stop(); }

uint16_t HttpServer::port() const { return impl_->port(); }
const std::string& HttpServer::host() const { return impl_->host(); }
void HttpServer::Start() { impl_->Start(); }
void HttpServer::Stop() { impl_->Stop(); }
void HttpServer::Drain() { impl_->Drain(); }
size_t HttpServer::open_connections() const { return impl_->open_connections(); }

}  // namespace warmroute::net
