// A minimal asynchronous Redis client: one TCP connection speaking RESP2 (net/redis/resp.h) on the
// caller's executor, with pipelining — commands issued by concurrent coroutines are written in
// order and their replies matched first-in first-out, so one connection serves a whole worker
// thread without locks.
//
// Why not hiredis (0.14 is installed): its async API would need an adapter from its callbacks
// and its own event hooks onto an Asio descriptor, its replies are allocated C structs, and
// deadlines would still be ours to build. We use a handful of commands (EVALSHA, EVAL, SCRIPT
// LOAD), and the protocol part we need is a small parser that we test without sockets; speaking
// RESP directly on an Asio socket keeps one I/O model, typed executors, C++20 coroutines and
// absl::Status at the edge, like net/http1/http_client.h.
//
// Usage:
//   absl::StatusOr<std::unique_ptr<RedisConnection>> c = co_await RedisConnection::Connect(
//       executor, RedisEndpoint{"127.0.0.1", 6379}, std::chrono::milliseconds(100));
//   if (!c.ok()) ...;                                        // Unavailable / DeadlineExceeded
//   std::vector<std::string_view> command = {"INCR", key};  // a local, never a temporary
//   absl::StatusOr<RespValue> reply =
//       co_await (*c)->Command(std::move(command), std::chrono::milliseconds(50));
//   if (!reply.ok()) ...;   // the transport failed: the connection is now broken
//   reply->is_error();      // a Redis error reply (-ERR ...) is a value, not a Status
//
// Failure model: any transport failure — a reset, an EOF, a malformed reply, or a command whose
// reply does not come within its timeout — breaks the connection: the socket is closed, every
// pending command completes with that error, and later commands fail at once. The owner makes
// a new connection (after a back-off of its choosing). A command whose caller is cancelled
// from outside (e.g. the HTTP client went away) completes with Cancelled and leaves the
// connection usable; its reply is read and dropped when it comes.
//
// Thread-safety: a connection belongs to its executor (one io_context thread); call it only
// from coroutines running there. It may be destroyed while commands are pending: they complete
// with Cancelled.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "net/redis/resp.h"
#include "net/task.h"

namespace warmroute::net {

struct RedisEndpoint {
  std::string host = "127.0.0.1";
  uint16_t port = 6379;
};

// Parses "redis://host[:port][/]" (port 6379 by default; IPv6 hosts in brackets; host and port
// as net/url.h accepts them; the scheme in lower case only). Databases, user names, passwords
// and TLS (rediss://) are not supported: InvalidArgument.
absl::StatusOr<RedisEndpoint> ParseRedisUrl(std::string_view url);

class RedisConnection {
 public:
  // Opens a connection within `timeout` (name resolution included, but see below).
  // Errors: Unavailable (refused, unreachable, the name does not resolve), DeadlineExceeded.
  // Host names go through getaddrinfo, which cannot be interrupted: give an IP address where a
  // slow DNS must not delay the deadline.
  static Task<absl::StatusOr<std::unique_ptr<RedisConnection>>> Connect(
      Executor executor, RedisEndpoint endpoint, std::chrono::milliseconds timeout);

  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Sends `args` as one command and returns its reply (which may be a Redis error reply).
  // Errors (the connection is broken afterwards, see above): Unavailable (reset, closed,
  // malformed reply, already broken), DeadlineExceeded (no reply within `timeout`).
  // Cancelled when the calling coroutine is cancelled.
  // REQUIRES: the strings viewed by `args` live until the command completes.
  Task<absl::StatusOr<RespValue>> Command(std::vector<std::string_view> args,
                                          std::chrono::milliseconds timeout);

  // Breaks the connection now: pending commands complete with Cancelled. Idempotent.
  void Close();

  // OK while the connection is usable; else the error that broke it.
  absl::Status status() const;
  // "host:port", for messages.
  const std::string& where() const;
  // Commands sent whose replies have not arrived yet.
  size_t pending() const;

  struct State;  // internal (redis_connection.cc)

 private:
  explicit RedisConnection(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;  // shared with the reader and writer coroutines
};

}  // namespace warmroute::net
