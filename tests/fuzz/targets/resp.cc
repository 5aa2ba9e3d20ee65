// The RESP reader (net/redis/resp.h) on Redis's replies, as the connection reads them: parse a
// value from the front of the buffer, drop it, repeat. Properties: a parsed value never claims
// more bytes than it was given, and parsing it again from a longer buffer (more bytes behind)
// gives the same length, while a strict prefix of it is "incomplete" (0), not an error: a value's
// end does not depend on how the socket delivered it.
#include <string>

#include "fuzz_target.h"
#include "net/redis/resp.h"

WARMROUTE_FUZZ_TARGET(resp) {
  std::string_view input = warmroute::fuzz::AsText(data, size);
  const std::string longer = std::string(input) + "+OK\r\n";
  size_t offset = 0;
  while (!input.empty()) {
    warmroute::net::RespValue value;
    absl::StatusOr<size_t> used = warmroute::net::ParseResp(input, value);
    if (!used.ok() || *used == 0) break;  // malformed, or incomplete: wait for more
    FUZZ_CHECK(*used <= input.size());
    warmroute::net::RespValue again;
    absl::StatusOr<size_t> used_again =
        warmroute::net::ParseResp(std::string_view(longer).substr(offset), again);
    FUZZ_CHECK(used_again.ok() && *used_again == *used);
    for (size_t cut : {*used - 1, *used / 2}) {
      warmroute::net::RespValue partial;
      absl::StatusOr<size_t> prefix = warmroute::net::ParseResp(input.substr(0, cut), partial);
      FUZZ_CHECK(prefix.ok() && *prefix == 0);
    }
    (void)warmroute::net::DescribeResp(value);
    input.remove_prefix(*used);
    offset += *used;
  }
  return 0;
}
