#include "net/redis/redis_connection.h"

#include <spdlog/spdlog.h>

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <deque>
#include <exception>
#include <optional>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "net/detached.h"
#include "net/url.h"

namespace warmroute::net {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

using Socket = asio::basic_stream_socket<tcp, Executor>;
using Resolver = asio::ip::basic_resolver<tcp, Executor>;
using Timer = asio::basic_waitable_timer<std::chrono::steady_clock,
                                         asio::wait_traits<std::chrono::steady_clock>, Executor>;

constexpr auto kTask = asio::as_tuple(asio::use_awaitable_t<Executor>{});
constexpr size_t kReadChunkBytes = 16 * 1024;

}  // namespace

absl::StatusOr<RedisEndpoint> ParseRedisUrl(std::string_view url) {
  const auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad Redis URL \"", AbslView(url), "\": ", AbslView(why)));
  };
  // Matched case-sensitively, unlike the other schemes warmroute reads.
  if (!url.starts_with("redis://")) return bad("expected redis://host[:port]");
  std::variant<Url, UrlError> parsed = ParseUrl(url);
  if (const UrlError* error = std::get_if<UrlError>(&parsed)) {
    switch (*error) {
      case UrlError::kUserInfo:
        return bad("credentials are not supported");
      case UrlError::kUnclosedBracket:
        return bad("unterminated IPv6 address");
      case UrlError::kJunkAfterBracket:
        return bad("expected :port after the address");
      case UrlError::kEmptyPort:
      case UrlError::kPortNotNumber:
      case UrlError::kPortOutOfRange:
        return bad("bad port");
      default:
        return bad(UrlErrorText(*error));
    }
  }
  Url& parts = std::get<Url>(parsed);
  if (!parts.path.empty() && parts.path != "/") return bad("database numbers are not supported");
  if (parts.host.empty()) return bad("no host");
  RedisEndpoint endpoint;
  endpoint.host = std::move(parts.host);
  if (parts.port.has_value()) endpoint.port = *parts.port;
  return endpoint;
}

namespace {

// One command waiting for its reply. `signal` is armed with the command's deadline and
// cancelled as soon as `result` is set: a timer used as a one-shot event with a timeout.
struct Pending {
  explicit Pending(Executor executor) : signal(executor) {}
  Timer signal;
  std::optional<absl::StatusOr<RespValue>> result;
};

}  // namespace

struct RedisConnection::State {
  explicit State(Executor executor) : executor(executor), socket(executor) {}

  // Breaks the connection: closes the socket and completes every pending command with
  // `status`. Idempotent (the first error wins).
  void Fail(absl::Status status) {
    if (!broken.ok()) return;
    broken = std::move(status);
    boost::system::error_code ignored;
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
    for (const std::shared_ptr<Pending>& p : pending) {
      p->result = broken;
      p->signal.cancel();
    }
    pending.clear();
    outgoing.clear();
  }

  Executor executor;
  Socket socket;
  std::string where;
  std::string outgoing;   // encoded commands not yet handed to the socket
  std::string in_flight;  // the bytes of the write in progress
  bool writing = false;
  std::string incoming;                          // received bytes not yet parsed into replies
  std::deque<std::shared_ptr<Pending>> pending;  // in the order the commands were queued
  absl::Status broken;                           // OK while usable
};

namespace {

using State = RedisConnection::State;

// Writes queued commands until none are left (commands queued meanwhile go in the next write).
Task<void> WriteCommands(std::shared_ptr<State> s) {
  while (s->broken.ok() && !s->outgoing.empty()) {
    s->in_flight.swap(s->outgoing);
    s->outgoing.clear();
    auto [ec, n] = co_await asio::async_write(s->socket, asio::buffer(s->in_flight), kTask);
    if (ec) {
      s->Fail(absl::UnavailableError(
          absl::StrCat("writing to redis at ", s->where, " failed: ", ec.message())));
      break;
    }
    s->in_flight.clear();
  }
  s->writing = false;
}

// Reads replies for the connection's lifetime and hands each to the oldest pending command.
// It waits without a deadline of its own: every command has one, and a command that times out
// breaks the connection, which ends this read.
Task<void> ReadReplies(std::shared_ptr<State> s) {
  std::array<char, kReadChunkBytes> chunk;
  for (;;) {
    size_t used_total = 0;
    for (;;) {
      RespValue reply;
      const std::string_view rest = std::string_view(s->incoming).substr(used_total);
      absl::StatusOr<size_t> used = ParseResp(rest, reply);
      if (!used.ok()) {
        s->Fail(absl::UnavailableError(
            absl::StrCat("redis at ", s->where, " sent a bad reply: ", used.status().message())));
        co_return;
      }
      if (*used == 0) break;
      used_total += *used;
      if (s->pending.empty()) {
        s->Fail(absl::UnavailableError(absl::StrCat(
            "redis at ", s->where, " sent a reply nobody asked for: ", DescribeResp(reply))));
        co_return;
      }
      std::shared_ptr<Pending> p = std::move(s->pending.front());
      s->pending.pop_front();
      p->result = std::move(reply);
      p->signal.cancel();
    }
    s->incoming.erase(0, used_total);
    if (!s->broken.ok()) co_return;
    auto [ec, n] = co_await s->socket.async_read_some(asio::buffer(chunk), kTask);
    if (ec) {
      s->Fail(absl::UnavailableError(absl::StrCat(
          "redis at ", s->where, ec == asio::error::eof ? " closed the connection" : " failed: ",
          ec == asio::error::eof ? "" : ec.message())));
      co_return;
    }
    s->incoming.append(chunk.data(), n);
  }
}

// Resolves `endpoint` (an IP address needs no resolver) and connects `socket` to it.
Task<absl::Status> ResolveAndConnect(std::shared_ptr<State> s, RedisEndpoint endpoint) {
  boost::system::error_code ec;
  const asio::ip::address address = asio::ip::make_address(endpoint.host, ec);
  if (!ec) {
    const tcp::endpoint target(address, endpoint.port);
    auto [cec] = co_await s->socket.async_connect(target, kTask);
    if (cec) {
      co_return absl::UnavailableError(
          absl::StrCat("connect to redis at ", s->where, " failed: ", cec.message()));
    }
    co_return absl::OkStatus();
  }
  Resolver resolver(s->executor);
  const std::string port = std::to_string(endpoint.port);
  auto [rec, results] =
      co_await resolver.async_resolve(endpoint.host, port, tcp::resolver::numeric_service, kTask);
  if (rec || results.empty()) {
    co_return absl::UnavailableError(
        absl::StrCat("cannot resolve redis host ", endpoint.host, ": ", rec.message()));
  }
  auto [cec, connected] = co_await asio::async_connect(s->socket, results, kTask);
  if (cec) {
    co_return absl::UnavailableError(
        absl::StrCat("connect to redis at ", s->where, " failed: ", cec.message()));
  }
  co_return absl::OkStatus();
}

}  // namespace

RedisConnection::RedisConnection(std::shared_ptr<State> state) : state_(std::move(state)) {}

RedisConnection::~RedisConnection() { Close(); }

void RedisConnection::Close() {
  state_->Fail(absl::CancelledError(
      absl::StrCat("the connection to redis at ", state_->where, " was closed")));
}

absl::Status RedisConnection::status() const { return state_->broken; }
const std::string& RedisConnection::where() const { return state_->where; }
size_t RedisConnection::pending() const { return state_->pending.size(); }

Task<absl::StatusOr<std::unique_ptr<RedisConnection>>> RedisConnection::Connect(
    Executor executor, RedisEndpoint endpoint, std::chrono::milliseconds timeout) {
  auto state = std::make_shared<State>(executor);
  state->where = absl::StrCat(endpoint.host, ":", endpoint.port);
  Timer deadline(executor);
  deadline.expires_after(timeout);
  auto connect = ResolveAndConnect(state, std::move(endpoint));
  auto expire = deadline.async_wait(asio::use_awaitable_t<Executor>{});
  auto race = std::move(connect) || std::move(expire);
  std::variant<absl::Status, std::monostate> winner = co_await std::move(race);
  if (winner.index() == 1) {
    boost::system::error_code ignored;
    state->socket.close(ignored);
    co_return absl::DeadlineExceededError(absl::StrCat(
        "connect to redis at ", state->where, " timed out after ", timeout.count(), " ms"));
  }
  absl::Status connected = std::get<0>(std::move(winner));
  if (!connected.ok()) co_return connected;
  boost::system::error_code ignored;
  state->socket.set_option(tcp::no_delay(true), ignored);
  asio::co_spawn(executor, ReadReplies(state),
                 [](std::exception_ptr e) { LogIfDetachedFailed("redis reader", e); });
  co_return std::unique_ptr<RedisConnection>(new RedisConnection(std::move(state)));
}

Task<absl::StatusOr<RespValue>> RedisConnection::Command(std::vector<std::string_view> args,
                                                         std::chrono::milliseconds timeout) {
  const std::shared_ptr<State> s = state_;  // `this` may be destroyed while we wait
  if (!s->broken.ok()) co_return s->broken;
  AppendRespCommand(s->outgoing, args);
  auto p = std::make_shared<Pending>(s->executor);
  p->signal.expires_after(timeout);
  s->pending.push_back(p);
  if (!s->writing) {
    s->writing = true;
    asio::co_spawn(s->executor, WriteCommands(s),
                   [](std::exception_ptr e) { LogIfDetachedFailed("redis writer", e); });
  }
  if (!p->result) {
    // Ends when the reply comes (cancel), at the deadline, or when the caller is cancelled.
    co_await p->signal.async_wait(kTask);
  }
  if (p->result) co_return std::move(*p->result);
  if (p->signal.expiry() <= Timer::clock_type::now()) {
    absl::Status late = absl::DeadlineExceededError(
        absl::StrCat("redis at ", s->where, " did not answer within ", timeout.count(), " ms"));
    s->Fail(late);
    co_return late;
  }
  // Cancelled from outside: the reply will be read and dropped (`p` stays queued).
  co_return absl::CancelledError("the redis command was cancelled");
}

}  // namespace warmroute::net
