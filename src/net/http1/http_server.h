// An HTTP/1.1 keep-alive server (Asio, Beast's streams; requests parsed by Http1RequestParser)
// that hands each complete request to a handler coroutine together with a ResponseWriter
// (net/http1/response_writer.h).
//
// Per connection (coroutine ServeConnection): TCP_NODELAY; a 16 KB read buffer; the next request
// must start within idle_timeout (a coarse deadline, net/socket/coarse_deadline.h: up to 40 ms late,
// and no timer operation per request) and its head must be complete within header_timeout
// (slowloris), its body within body_timeout; bodies over body_limit_bytes get 413 with an OpenAI
// error body, heads over header_limit_bytes 431, malformed requests 400, and the connection is
// closed after any of them; a client that closes or stalls mid-request is closed silently.
// "Expect: 100-continue" is answered. While the handler runs the socket is watched, from 20 ms
// after the request on: if the client closes it, the handler is cancelled. Each write must
// complete within write_timeout. A handler that returns without answering gets a 500; one that
// returns mid-stream gets its stream finished.
//
// TLS (options.tls set): every connection starts with a TLS handshake that must complete within
// header_timeout; one that fails (a plaintext client, no or an untrusted client certificate when
// the context requires one, TLS < 1.2) or times out is closed and logged at debug level, and
// nothing else is affected. The plaintext path stays as it is: hand-built heads written with
// one speculative writev; TLS writes go as one record per response piece. Closing sends no
// close_notify (the response framing tells where it ends).
//
// Usage:
//   boost::asio::io_context io;
//   HttpServerOptions options;                                   // port 0: ephemeral
//   auto server = HttpServer::Create(io, options, handler);      // binds and listens
//   if (!server.ok()) ...;
//   (*server)->Start();
//   printf("listening on %d\n", (*server)->port());
//   io.run();                       // until Stop() and every connection has ended
//
// Thread-safety: the io_context must be run by one thread. Start() and Stop() are called on that
// thread (or before io.run()). Destroy the server only after its connections ended (io.run()
// returned).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "net/http1/response_writer.h"
#include "net/tls/tls.h"

namespace warmroute::net {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: an ephemeral port, see HttpServer::port()
  // SO_REUSEPORT: several servers (one per thread, each on its own io_context) bind the same
  // port and the kernel spreads connections over them.
  bool reuse_port = false;
  size_t body_limit_bytes = size_t{32} << 20;
  size_t header_limit_bytes = size_t{64} << 10;
  std::chrono::milliseconds idle_timeout{120'000};   // keep-alive wait for the next request
  std::chrono::milliseconds header_timeout{10'000};  // first byte to end of the request head
  std::chrono::milliseconds body_timeout{60'000};    // end of head to end of body
  std::chrono::milliseconds write_timeout{60'000};   // each write to the client
  // Set: TLS on every connection (net/tls/tls.h's MakeTlsServerContext). Null: plaintext.
  std::shared_ptr<TlsContext> tls = nullptr;
  // Set: asked with each request's head; true streams that request's body to the handler as it
  // arrives (HttpRequest::body_reader) instead of reading it whole first. Its body limit is
  // body_limit_bytes, and body_timeout bounds each wait for a piece (not the whole body). A
  // handler that leaves part of it unread closes the connection after its response.
  std::function<bool(const HttpRequest& head)> stream_body = nullptr;
};

// Handles one request. `request` and `writer` belong to the connection and are valid until the
// returned task completes; the handler may change the request or move from it. (The connection
// parses its next request into the same object, reusing its memory: a handler that moves the
// body out, or keeps references into it past its task, defeats or breaks that.)
using HttpHandler = std::function<Task<void>(HttpRequest& request, ResponseWriter& writer)>;

class HttpServer {
 public:
  // Binds and listens on options.host:options.port. Unavailable when that fails (address in
  // use, bad host).
  static absl::StatusOr<std::unique_ptr<HttpServer>> Create(boost::asio::io_context& io,
                                                            HttpServerOptions options,
                                                            HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound port (the ephemeral one when options.port was 0).
  uint16_t port() const;
  const std::string& host() const;

  // Starts accepting connections. Call once.
  void Start();

  // Stops accepting and closes every open connection (running handlers are cancelled).
  // Idempotent.
  void Stop();

  // A graceful stop's first step: stops accepting, closes the connections that wait for their
  // next request, and lets the requests in progress finish: their responses say Connection:
  // close (those whose head is not written yet) and each connection closes after its response.
  // Idempotent; Stop still cuts what remains. Call on the server's executor.
  void Drain();

  // Connections open now (any thread): 0 once a Drain has let every request finish.
  size_t open_connections() const;

 private:
  class Impl;
  explicit HttpServer(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace warmroute::net
