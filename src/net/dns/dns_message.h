// The DNS wire format (RFC 1035, RFC 2782 for SRV, RFC 3596 for AAAA, RFC 6891 for the EDNS0
// OPT record), sans I/O: a query is encoded to bytes, and a response's bytes are decoded into a
// Message. The resolver (dns_resolver.h) moves the bytes; everything that can go wrong with them
// is decided here and tested without sockets.
//
// Why our own codec: STACK.md has no DNS library, and glibc's res_* functions cannot be pointed
// at a server on another port than 53 (tests run a dnsmasq on a loopback port). We need three
// record types and the response's header, which is a few hundred lines.
//
// Decoding never trusts the bytes: every length is checked against the message's end, names
// follow compression pointers only backwards (a pointer to itself or forwards, which could loop,
// is an error), a name is at most 255 bytes, and every count is bounded by the bytes present.
// Errors are InvalidArgument "DNS message: <what> at byte N".
//
// Usage:
//   absl::StatusOr<std::string> query = EncodeQuery(0x1234, "vllm.svc.cluster.local",
//                                                   RecordType::kA);
//   ... send *query over UDP, receive `bytes` ...
//   absl::StatusOr<Message> reply = DecodeMessage(bytes);
//   if (reply.ok() && reply->rcode == kRcodeNoError)
//     for (const Record& r : AnswersFor(*reply, "vllm.svc.cluster.local", RecordType::kA)) ...
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace warmroute::net::dns {

enum class RecordType : uint16_t {
  kA = 1,
  kCname = 5,
  kAaaa = 28,
  kSrv = 33,
  kOpt = 41,
};
std::string_view RecordTypeName(uint16_t type);

// Response codes (RFC 1035 4.1.1) the resolver tells apart.
inline constexpr int kRcodeNoError = 0;
inline constexpr int kRcodeFormErr = 1;
inline constexpr int kRcodeServFail = 2;
inline constexpr int kRcodeNxDomain = 3;
inline constexpr int kRcodeRefused = 5;
// "NOERROR", "SERVFAIL", "NXDOMAIN", ...; "RCODE<n>" for others.
std::string RcodeName(int rcode);

// The UDP payload size our queries advertise (EDNS0): answers up to it are not truncated. 1232 is
// the size DNS Flag Day 2020 recommends (no IP fragmentation on common paths).
inline constexpr uint16_t kEdnsUdpPayload = 1232;

struct Question {
  std::string name;  // dotted, without the trailing dot, as received
  uint16_t type = 0;
  uint16_t klass = 1;  // IN
};

struct SrvData {
  uint16_t priority = 0;
  uint16_t weight = 0;
  uint16_t port = 0;
  std::string target;  // dotted, without the trailing dot
};

struct Record {
  std::string name;
  uint16_t type = 0;
  uint16_t klass = 1;
  uint32_t ttl = 0;
  std::string address;  // A, AAAA: the address as text ("10.0.0.5", "fd00::5")
  SrvData srv;          // SRV
  std::string cname;    // CNAME: the canonical name
};

struct Message {
  uint16_t id = 0;
  bool response = false;   // QR
  bool truncated = false;  // TC: the answer did not fit; the records present may be partial
  int rcode = kRcodeNoError;
  std::vector<Question> questions;
  std::vector<Record> answers;
  std::vector<Record> additionals;  // the authority section is skipped
};

// InvalidArgument "'<name>' is not a DNS name (<why>)" for an empty name, an empty label
// ("a..b"), a label over 63 bytes or a name over 253 characters (a trailing dot is allowed).
absl::Status ValidateDnsName(std::string_view name);

// A standard query (RD set, one question of class IN) with an EDNS0 OPT record advertising
// kEdnsUdpPayload. ValidateDnsName's error for a name that is not a DNS name.
absl::StatusOr<std::string> EncodeQuery(uint16_t id, std::string_view name, RecordType type);

// Decodes a whole message. Records of types other than A, AAAA, SRV and CNAME are kept with only
// their header fields.
absl::StatusOr<Message> DecodeMessage(std::string_view bytes);

// The answers of `message` of `type` for `name` (case-insensitive, a trailing dot ignored),
// following CNAME records in the answer section from `name` (at most 8 in a chain).
std::vector<Record> AnswersFor(const Message& message, std::string_view name, RecordType type);

// Whether two DNS names are the same (ASCII case-insensitive, trailing dots ignored).
bool SameName(std::string_view a, std::string_view b);

}  // namespace warmroute::net::dns
