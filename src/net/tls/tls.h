// TLS contexts (OpenSSL through Boost.Asio ssl) for the HTTP server (net/http1/http_server.h: TLS
// termination, optionally requiring client certificates) and the upstream client
// (net/http1/http_client.h: TLS, optionally mTLS, to backends). TLS 1.2 is the minimum on both sides.
//
// Every file is read and checked when the context is made, so that a bad setting is an error at
// start, not at the first handshake:
//   cannot read '/etc/x.pem': No such file or directory      (unreadable)
//   '/etc/x.pem' holds no PEM certificate (...)               (not PEM, or the wrong kind)
//   the private key in 'k.pem' does not match the certificate in 'c.pem'
// The error is InvalidArgument with the option at fault attached as its param (common/status.h:
// "cert_file", "key_file", "client_ca_file", "ca_file"), so that callers can name their own key
// ("listen.tls.cert_file: cannot read ...", "--tls-cert: cannot read ...").
//
// Usage:
//   absl::StatusOr<std::shared_ptr<boost::asio::ssl::context>> server =
//       MakeTlsServerContext({.cert_file = "srv.pem", .key_file = "srv.key"});
//   HttpServerOptions options;
//   options.tls = *server;
//
// Thread-safety: the functions are thread-safe. A context is immutable once made and may be
// shared by servers and pools on several threads.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace warmroute::net {

using TlsContext = boost::asio::ssl::context;

struct TlsServerOptions {
  std::string cert_file = {};  // PEM: the server's certificate, then its chain (required)
  std::string key_file = {};   // PEM: its private key, unencrypted (required)
  // PEM CAs; set: every client must present a certificate signed by one of them.
  std::string client_ca_file = {};
};

struct TlsClientOptions {
  std::string ca_file = {};    // PEM CAs that verify the server; empty: the system's CA store
  std::string cert_file = {};  // PEM client certificate (mTLS) with key_file; empty: none
  std::string key_file = {};
};

absl::StatusOr<std::shared_ptr<TlsContext>> MakeTlsServerContext(const TlsServerOptions& options);

// The server's certificate is always verified (the name is checked per connection: see
// UpstreamPool's tls_server_name).
absl::StatusOr<std::shared_ptr<TlsContext>> MakeTlsClientContext(const TlsClientOptions& options);

}  // namespace warmroute::net
