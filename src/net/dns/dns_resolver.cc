#include "net/dns/dns_resolver.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fstream>
#include <sstream>
#include <utility>
#include <variant>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/absl_view.h"

namespace warmroute::net::dns {
namespace {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using udp = asio::ip::udp;
using tcp = asio::ip::tcp;
using Socket = asio::basic_datagram_socket<udp, Executor>;
using TcpSocket = asio::basic_stream_socket<tcp, Executor>;
using Timer = asio::basic_waitable_timer<std::chrono::steady_clock,
                                         asio::wait_traits<std::chrono::steady_clock>, Executor>;

constexpr size_t kMaxDatagram = 65535;
constexpr int kAttempts = 2;

std::string QueryName(std::string_view name, RecordType type) {
  return absl::StrCat(AbslView(name), " ", AbslView(RecordTypeName(static_cast<uint16_t>(type))));
}

// Whether `reply` answers query `id` for name/type.
bool Answers(const Message& reply, uint16_t id, std::string_view name, RecordType type) {
  return reply.response && reply.id == id && reply.questions.size() == 1 &&
         reply.questions[0].type == static_cast<uint16_t>(type) &&
         SameName(reply.questions[0].name, name);
}

// One query over TCP (RFC 1035 4.2.2: each message preceded by its 2-byte length): the answer's
// bytes. Cancelled (by the caller's deadline) through the socket's operations.
Task<absl::StatusOr<std::string>> TcpRoundTrip(std::shared_ptr<TcpSocket> socket,
                                               tcp::endpoint server, std::string framed) {
  const auto use = asio::as_tuple(asio::use_awaitable_t<Executor>{});
  const auto [connect_ec] = co_await socket->async_connect(server, use);
  if (connect_ec) co_return absl::UnavailableError(connect_ec.message());
  const auto [write_ec, written] = co_await asio::async_write(*socket, asio::buffer(framed), use);
  if (write_ec) co_return absl::UnavailableError(write_ec.message());
  unsigned char length[2] = {};
  const auto [length_ec, read] = co_await asio::async_read(*socket, asio::buffer(length), use);
  if (length_ec) co_return absl::UnavailableError(length_ec.message());
  std::string body(size_t{length[0]} << 8 | length[1], '\0');
  const auto [body_ec, body_read] = co_await asio::async_read(*socket, asio::buffer(body), use);
  if (body_ec) co_return absl::UnavailableError(body_ec.message());
  co_return body;
}

}  // namespace

absl::StatusOr<DnsServer> ParseResolvConf(std::string_view text) {
  for (absl::string_view line : absl::StrSplit(AbslView(text), '\n')) {
    line = absl::StripLeadingAsciiWhitespace(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    std::vector<absl::string_view> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (words.size() >= 2 && words[0] == "nameserver") {
      std::string host(words[1]);
      // A link-local IPv6 server may carry a zone ("fe80::1%eth0"): kept, the socket reads it.
      return DnsServer{.host = std::move(host), .port = 53};
    }
  }
  return absl::NotFoundError("no nameserver line");
}

absl::StatusOr<DnsServer> SystemDnsServer() {
  constexpr const char* kPath = "/etc/resolv.conf";
  std::ifstream file(kPath);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot read ", kPath));
  std::stringstream text;
  text << file.rdbuf();
  absl::StatusOr<DnsServer> server = ParseResolvConf(text.str());
  if (!server.ok()) {
    return absl::NotFoundError(absl::StrCat(kPath, ": ", server.status().message()));
  }
  return server;
}

DnsResolver::DnsResolver(Executor executor, DnsServer server, std::chrono::milliseconds timeout,
                         uint64_t seed)
    : executor_(executor), server_(std::move(server)), timeout_(timeout), rng_(seed) {}

absl::StatusOr<DnsResolver::Outgoing> DnsResolver::Prepare(std::string_view name,
                                                            RecordType type) {
  Outgoing out;
  out.id = static_cast<uint16_t>(rng_.Next());
  absl::StatusOr<std::string> query = EncodeQuery(out.id, name, type);
  if (!query.ok()) return query.status();
  out.query = std::move(*query);
  boost::system::error_code ec;
  out.server = asio::ip::make_address(server_.host, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("the DNS server '", server_.host, "' is not an IP address"));
  }
  return out;
}

Task<absl::StatusOr<Message>> DnsResolver::ExchangeTcp(std::string name, RecordType type) {
  absl::StatusOr<Outgoing> out = Prepare(name, type);
  if (!out.ok()) co_return out.status();
  const uint16_t id = out->id;
  std::string framed;
  framed.push_back(static_cast<char>(out->query.size() >> 8));
  framed.push_back(static_cast<char>(out->query.size() & 0xff));
  framed.append(out->query);
  auto socket = std::make_shared<TcpSocket>(executor_);
  Timer deadline(executor_);
  deadline.expires_after(timeout_);
  auto exchange = TcpRoundTrip(socket, tcp::endpoint(out->server, server_.port), std::move(framed));
  auto expire = deadline.async_wait(asio::use_awaitable_t<Executor>{});
  auto race = std::move(exchange) || std::move(expire);
  std::variant<absl::StatusOr<std::string>, std::monostate> winner = co_await std::move(race);
  if (winner.index() == 1) {
    co_return absl::DeadlineExceededError(
        absl::StrCat("no answer over TCP within ", timeout_.count(), " ms"));
  }
  absl::StatusOr<std::string> bytes = std::get<0>(std::move(winner));
  if (!bytes.ok()) co_return bytes.status();
  absl::StatusOr<Message> reply = DecodeMessage(*bytes);
  if (!reply.ok()) co_return reply.status();
  if (!Answers(*reply, id, name, type)) {
    co_return absl::InvalidArgumentError("the answer over TCP does not answer the query");
  }
  co_return reply;
}

Task<absl::StatusOr<Message>> DnsResolver::Exchange(std::string name, RecordType type) {
  absl::StatusOr<Outgoing> out = Prepare(name, type);
  if (!out.ok()) co_return out.status();
  const uint16_t id = out->id;
  boost::system::error_code ec;
  const udp::endpoint server(out->server, server_.port);
  Socket socket(executor_);
  socket.open(server.protocol(), ec);
  if (!ec) socket.connect(server, ec);
  if (ec) co_return absl::UnavailableError(ec.message());
  const auto [send_ec, sent] =
      co_await socket.async_send(asio::buffer(out->query), asio::as_tuple(asio::use_awaitable_t<Executor>{}));
  if (send_ec) co_return absl::UnavailableError(send_ec.message());
  Timer deadline(executor_);
  deadline.expires_after(timeout_);
  std::vector<char> buffer(kMaxDatagram);
  std::string ignored;  // why the last datagram was ignored, for the timeout's message
  while (true) {
    auto receive = socket.async_receive(asio::buffer(buffer),
                                        asio::as_tuple(asio::use_awaitable_t<Executor>{}));
    auto expire = deadline.async_wait(asio::as_tuple(asio::use_awaitable_t<Executor>{}));
    auto race = std::move(receive) || std::move(expire);
    auto winner = co_await std::move(race);
    if (winner.index() == 1) {
      co_return absl::DeadlineExceededError(absl::StrCat(
          "no answer within ", timeout_.count(), " ms", ignored.empty() ? "" : " (", ignored,
          ignored.empty() ? "" : ")"));
    }
    const auto [receive_ec, n] = std::get<0>(winner);
    if (receive_ec) co_return absl::UnavailableError(receive_ec.message());
    absl::StatusOr<Message> reply = DecodeMessage(std::string_view(buffer.data(), n));
    if (!reply.ok()) {
      ignored = absl::StrCat("ignored a datagram: ", reply.status().message());
      continue;
    }
    if (!Answers(*reply, id, name, type)) {
      ignored = "ignored a datagram that does not answer the query";
      continue;
    }
    co_return reply;
  }
}

Task<absl::StatusOr<std::vector<Record>>> DnsResolver::Query(std::string name, RecordType type) {
  const std::string what = QueryName(name, type);
  absl::StatusOr<Message> reply = absl::UnknownError("not sent");
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    reply = co_await Exchange(name, type);
    if (reply.ok() || reply.status().code() == absl::StatusCode::kInvalidArgument) break;
  }
  std::string_view via = "";
  if (reply.ok() && reply->truncated) {
    // Too large for UDP: asked again over TCP, once (within its own deadline).
    reply = co_await ExchangeTcp(name, type);
    via = "truncated over UDP; over TCP: ";
  }
  if (!reply.ok()) {
    co_return absl::Status(reply.status().code(),
                           absl::StrCat(what, ": ", AbslView(via), reply.status().message()));
  }
  if (reply->rcode == kRcodeNxDomain) co_return absl::NotFoundError(absl::StrCat(what, ": NXDOMAIN"));
  if (reply->rcode != kRcodeNoError) {
    co_return absl::UnavailableError(absl::StrCat(what, ": ", RcodeName(reply->rcode)));
  }
  co_return AnswersFor(*reply, name, type);
}

Task<absl::Status> DnsResolver::AppendAddresses(std::string name, uint16_t port,
                                                std::vector<ServiceEndpoint>* out) {
  for (RecordType type : {RecordType::kA, RecordType::kAaaa}) {
    absl::StatusOr<std::vector<Record>> records = co_await Query(name, type);
    if (!records.ok()) co_return records.status();
    for (const Record& r : *records) out->push_back({.host = r.address, .port = port});
  }
  co_return absl::OkStatus();
}

Task<absl::StatusOr<std::vector<ServiceEndpoint>>> DnsResolver::ResolveService(std::string name,
                                                                              uint16_t port) {
  std::vector<ServiceEndpoint> out;
  if (!name.starts_with('_')) {
    absl::Status status = co_await AppendAddresses(name, port, &out);
    if (!status.ok()) co_return status;
    co_return out;
  }
  absl::StatusOr<std::vector<Record>> srv = co_await Query(name, RecordType::kSrv);
  if (!srv.ok()) co_return srv.status();
  for (const Record& r : *srv) {
    if (r.srv.target.empty()) continue;  // "." : the service is decidedly not there (RFC 2782)
    absl::Status status = co_await AppendAddresses(r.srv.target, r.srv.port, &out);
    if (!status.ok()) co_return status;
  }
  co_return out;
}

}  // namespace warmroute::net::dns
