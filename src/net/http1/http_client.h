// An HTTP/1.1 client for a proxy's upstream side (Boost.Beast): a keep-alive connection pool per
// upstream endpoint, and one exchange at a time per pooled connection whose response body can be
// relayed piece by piece as it arrives (SSE) or read whole.
//
// Per request, as little as possible: the request head is built in a string the connection
// keeps and written with the body in one non-blocking writev (plaintext; a healthy connection
// takes it whole, no reactor round trip); the response is parsed by Http1ResponseParser straight
// into UpstreamResponseHead and the connection's piece buffer (no header container in between).
//
// Life of an exchange:
//   UpstreamPool pool(io.get_executor(), "127.0.0.1", 8001, PoolOptions{});
//   absl::StatusOr<std::unique_ptr<UpstreamExchange>> x =
//       co_await UpstreamExchange::Start(pool, request, timeouts);   // connect/reuse, send, head
//   if (!x.ok()) ...;            // see "Errors" — nothing of the response was read
//   (*x)->head().status;
//   for (;;) {
//     absl::StatusOr<std::string_view> piece = co_await (*x)->ReadSome();
//     if (!piece.ok()) ...;      // the upstream failed mid-body
//     if (piece->empty()) break; // the body is complete
//     relay(*piece);             // valid until the next ReadSome
//   }
//   // Destroying the exchange returns its connection to the pool when the whole response was
//   // read and both sides keep the connection alive; otherwise it closes the connection, which
//   // is how an abandoned request is cancelled upstream (vLLM aborts a request whose client
//   // disconnects).
//
// Errors of Start (the caller decides about retries):
//   Unavailable       connect refused/failed, the connection reset or closed before a response
//                     head (the request was not answered), or a malformed response head;
//                     `ConnectFailed(status)` tells a connect failure (nothing was sent) apart.
//   DeadlineExceeded  connect or first-byte (response head) timeout.
// ReadSome fails with Unavailable (reset, early close, bad chunk encoding) or DeadlineExceeded
// (no body bytes for `idle_stream`).
// The first_byte and idle_stream timeouts are coarse deadlines (net/socket/coarse_deadline.h): they fire
// up to 40 ms late, and cost no timer operation per request. Connecting uses an exact timer.
//
// A reused keep-alive connection that fails before any response byte (the upstream closed it
// while idle: EOF or reset) is replaced by a new connection and the exchange retried once; the
// upstream cannot have processed a request on a connection it had already closed. A connection
// that waited in the pool for 10 ms or more is first probed (a non-blocking peek) and closed
// instead of reused if its upstream sent anything meanwhile: bytes no request asked for would
// otherwise be read as the next request's response. Over TLS the probe sees only a close.
//
// A pool may be destroyed while exchanges it started still run: they finish on their own and
// close their connection instead of returning it.
//
// TLS (PoolOptions::tls set): each new connection does a TLS handshake right after TCP connect,
// within UpstreamTimeouts::connect, verifying the upstream's certificate against the context's
// CAs and tls_server_name (SNI is sent for a DNS name); the context may carry a client
// certificate (mTLS). A failed handshake is a connect failure (ConnectFailed: nothing was sent),
// "TLS handshake with host:port failed: certificate verify failed (unable to get local issuer
// certificate)". Pooled connections stay TLS sessions: keep-alive saves the handshakes.
//
// Thread-safety: a pool and its exchanges belong to one io_context thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "net/http1/body_reader.h"
#include "net/http1/response_parser.h"
#include "net/http1/response_writer.h"
#include "net/tls/tls.h"

namespace warmroute::net {

struct UpstreamTimeouts {
  std::chrono::milliseconds connect{2000};
  std::chrono::milliseconds first_byte{300'000};  // request sent -> response head
  std::chrono::milliseconds idle_stream{60'000};  // between two pieces of the response body
};

struct PoolOptions {
  size_t max_idle = 256;  // idle keep-alive connections kept per pool
  // Set: TLS to the upstream (net/tls/tls.h's MakeTlsClientContext). Null: plaintext.
  std::shared_ptr<TlsContext> tls = nullptr;
  std::string tls_server_name = {};  // SNI and the name the certificate must match; empty: host
};

struct UpstreamRequest {
  std::string_view method = "POST";
  std::string_view target = "/";
  // Headers to send besides Host, Content-Length and Connection (which the client sets).
  const HttpHeaders* headers = nullptr;
  std::string_view body;
  // Set: the body is sent as it is read from here, after `body` (chunked transfer coding; each
  // write bounded by timeouts.idle_stream), and nothing is retried once a piece was read.
  BodyReader* body_stream = nullptr;
};

class UpstreamExchange;

class UpstreamPool {
 public:
  UpstreamPool(Executor executor, std::string host, uint16_t port, PoolOptions options = {});
  ~UpstreamPool();
  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  const std::string& host() const { return host_; }
  uint16_t port() const { return port_; }
  size_t idle_connections() const;
  // The pool's TLS context; null for plaintext.
  TlsContext* tls_context() const { return options_.tls.get(); }
  // Closes every idle connection (e.g. the backend was removed).
  void CloseIdle();
  // Closes the idle connections whose upstream spoke or closed while they waited (its keep-alive
  // timeout, a restart; probed as before a reuse, those that waited at least a few ms): each
  // would be replaced at its next use anyway, and until then holds a descriptor in CLOSE-WAIT.
  // For a caller's periodic sweep; returns how many it closed.
  size_t CloseStale();

  // Internal (defined in http_client.cc).
  struct Connection;
  struct State;

 private:
  friend class UpstreamExchange;
  Executor executor_;
  std::string host_;
  uint16_t port_;
  PoolOptions options_;
  std::shared_ptr<State> state_;  // shared with exchanges, which may outlive a removed pool
};

class UpstreamExchange {
 public:
  static Task<absl::StatusOr<std::unique_ptr<UpstreamExchange>>> Start(
      UpstreamPool& pool, const UpstreamRequest& request, const UpstreamTimeouts& timeouts);
  ~UpstreamExchange();
  UpstreamExchange(const UpstreamExchange&) = delete;
  UpstreamExchange& operator=(const UpstreamExchange&) = delete;

  const UpstreamResponseHead& head() const { return head_; }
  // Moves the head out (a relay passes its headers and content type on without copying them);
  // head() keeps only the status and `chunked`.
  UpstreamResponseHead TakeHead() {
    UpstreamResponseHead out;
    out.status = head_.status;
    out.content_type = std::move(head_.content_type);
    head_.content_type.clear();
    out.chunked = head_.chunked;
    out.headers = std::move(head_.headers);
    head_.headers.clear();
    return out;
  }

  // The next piece of the body as it arrives (chunk framing removed); empty once the body is
  // complete. The view is valid until the next call.
  Task<absl::StatusOr<std::string_view>> ReadSome();

  // The rest of the body; OutOfRange beyond `limit` bytes.
  Task<absl::StatusOr<std::string>> ReadAll(size_t limit);

  // True once the whole body was read.
  bool done() const;

  // Bounds each later wait for a piece of the body by `idle_stream` instead of the exchange's
  // timeouts' (an error body, which comes with its head, is not waited for as long as a body
  // that an engine generates).
  void set_idle_stream(std::chrono::milliseconds idle_stream) {
    timeouts_.idle_stream = idle_stream;
  }

 private:
  UpstreamExchange();
  std::shared_ptr<UpstreamPool::State> state_;  // the pool's, which the exchange may outlive
  std::unique_ptr<UpstreamPool::Connection> connection_;
  std::optional<Http1ResponseParser> parser_;
  UpstreamTimeouts timeouts_;
  bool done_ = false;
  bool failed_ = false;
  UpstreamResponseHead head_;
};

// True when a Start error means the connection could not be established (nothing was sent).
bool ConnectFailed(const absl::Status& status);

}  // namespace warmroute::net
