// The DNS message decoder (net/dns/dns_message.h) on a DNS server's answer (UDP or TCP):
// compression pointers (loops, forward pointers, pointers past the end), truncated records and
// counts that promise more than the message holds must be refused, never crash or loop; a
// decoded message's answers can be looked up.
#include "fuzz_target.h"
#include "net/dns/dns_message.h"

namespace dns = warmroute::net::dns;

WARMROUTE_FUZZ_TARGET(dns_message) {
  absl::StatusOr<dns::Message> message = dns::DecodeMessage(warmroute::fuzz::AsText(data, size));
  if (!message.ok()) {
    FUZZ_CHECK(!message.status().message().empty());
    return 0;
  }
  for (const dns::Question& question : message->questions) {
    for (dns::RecordType type : {dns::RecordType::kA, dns::RecordType::kAaaa, dns::RecordType::kSrv}) {
      (void)dns::AnswersFor(*message, question.name, type);
    }
  }
  return 0;
}
