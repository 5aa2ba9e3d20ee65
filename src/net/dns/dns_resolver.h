// A small asynchronous DNS stub resolver over UDP on the caller's executor: one server, the
// record types DNS discovery needs (A, AAAA, SRV), our own codec (dns_message.h).
//
// Each query goes out on a new UDP socket (a fresh source port) with a random 16-bit id (from
// the seed given, which should come from the OS); a datagram whose id, question name or type
// does not match, or that does not decode, is ignored, and the wait goes on until the deadline.
// No answer within `timeout` (or an ICMP "port unreachable") is retried once with a new id and
// socket, then fails.
//
// The queries advertise a 1,232-byte EDNS0 payload (about 70 A records or 40 AAAA for one name);
// a truncated (TC) answer is asked again over TCP, once, within its own `timeout`.
// Answers' TTLs are not used: the caller decides how often to ask.
//
// Errors: NotFound for NXDOMAIN; Unavailable for SERVFAIL, REFUSED, other rcodes and a refused
// socket or connection; DeadlineExceeded when no answer came to either attempt;
// InvalidArgument for a name that is not a DNS name. Messages name the query ("vllm.test A: ...").
//
// Usage:
//   DnsResolver resolver(executor, {.host = "127.0.0.1", .port = 5353},
//                        std::chrono::milliseconds(1000), seed);
//   absl::StatusOr<std::vector<ServiceEndpoint>> endpoints =
//       co_await resolver.ResolveService("vllm.svc.cluster.local", 8000);
//
// Thread-safety: use one resolver from coroutines on its executor's thread.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/rng.h"
#include "net/dns/dns_message.h"
#include "net/task.h"

namespace warmroute::net::dns {

struct DnsServer {
  std::string host;  // an IP address (IPv6 without brackets)
  uint16_t port = 53;
};

// The first "nameserver" of resolv.conf text (resolv.conf(5)); NotFound when there is none.
absl::StatusOr<DnsServer> ParseResolvConf(std::string_view text);
// ParseResolvConf of /etc/resolv.conf; NotFound naming the file when it cannot be read.
absl::StatusOr<DnsServer> SystemDnsServer();

struct ServiceEndpoint {
  std::string host;  // an IP address as text
  uint16_t port = 0;
};

class DnsResolver {
 public:
  DnsResolver(Executor executor, DnsServer server, std::chrono::milliseconds timeout,
              uint64_t seed);
  DnsResolver(const DnsResolver&) = delete;
  DnsResolver& operator=(const DnsResolver&) = delete;

  // The records of `type` for `name` in the answer (CNAMEs followed); empty for NOERROR
  // without such records.
  Task<absl::StatusOr<std::vector<Record>>> Query(std::string name, RecordType type);

  // An SRV name (starting with '_'): its SRV records' targets' A and AAAA addresses, each with
  // its record's port (`port` unused). Another name: its A and AAAA addresses with `port`.
  // Any query failing fails the whole resolution (a partial set would drop live backends).
  Task<absl::StatusOr<std::vector<ServiceEndpoint>>> ResolveService(std::string name,
                                                                   uint16_t port);

  const DnsServer& server() const { return server_; }

 private:
  // One query and its answer over UDP, matched by id and question.
  Task<absl::StatusOr<Message>> Exchange(std::string name, RecordType type);
  // The same over TCP (after a truncated UDP answer).
  Task<absl::StatusOr<Message>> ExchangeTcp(std::string name, RecordType type);
  // A query with a fresh id, and the server's address.
  struct Outgoing {
    uint16_t id = 0;
    std::string query;
    boost::asio::ip::address server;
  };
  absl::StatusOr<Outgoing> Prepare(std::string_view name, RecordType type);
  // A and AAAA of `name`, appended to `out` with `port`.
  Task<absl::Status> AppendAddresses(std::string name, uint16_t port,
                                     std::vector<ServiceEndpoint>* out);

  Executor executor_;
  DnsServer server_;
  std::chrono::milliseconds timeout_;
  Rng rng_;
};

}  // namespace warmroute::net::dns
