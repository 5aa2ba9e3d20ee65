#include "net/dns/dns_resolver.h"

#include <gtest/gtest.h>

namespace warmroute::net::dns {
namespace {

TEST(ParseResolvConfTest, TakesTheFirstNameserver) {
  absl::StatusOr<DnsServer> server = ParseResolvConf(
      "# generated\n; comment\nsearch svc.cluster.local\n  nameserver\t10.96.0.10  \n"
      "nameserver 8.8.8.8\noptions ndots:5\n");
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(server->host, "10.96.0.10");
  EXPECT_EQ(server->port, 53);
}

TEST(ParseResolvConfTest, ReadsIpv6Servers) {
  absl::StatusOr<DnsServer> server = ParseResolvConf("nameserver fd00::a\n");
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(server->host, "fd00::a");
}

TEST(ParseResolvConfTest, NoNameserverIsNotFound) {
  EXPECT_EQ(ParseResolvConf("search x\n#nameserver 1.1.1.1\nnameserver\n").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ParseResolvConf("").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace warmroute::net::dns
