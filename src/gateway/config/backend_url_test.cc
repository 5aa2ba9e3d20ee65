#include "gateway/config/backend_url.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::gateway {
namespace {

using ::testing::HasSubstr;

TEST(BackendUrlTest, ParsesHostAndPort) {
  absl::StatusOr<HttpHostPort> hp = ParseBackendUrl("http://127.0.0.1:8001");
  ASSERT_TRUE(hp.ok()) << hp.status();
  EXPECT_EQ(hp->host, "127.0.0.1");
  EXPECT_EQ(hp->port, 8001);
  EXPECT_EQ(HostPortString(*hp), "127.0.0.1:8001");
  EXPECT_EQ(CanonicalBackendUrl(*hp), "http://127.0.0.1:8001");
}

TEST(BackendUrlTest, AcceptsTrailingSlashUpperCaseSchemeNamesAndIpv6) {
  absl::StatusOr<HttpHostPort> hp = ParseBackendUrl("HTTP://vllm-0.pool_a.local:80/");
  ASSERT_TRUE(hp.ok()) << hp.status();
  EXPECT_EQ(hp->host, "vllm-0.pool_a.local");
  EXPECT_EQ(hp->port, 80);
  EXPECT_EQ(CanonicalBackendUrl(*hp), "http://vllm-0.pool_a.local:80");

  hp = ParseBackendUrl("http://[::1]:65535");
  ASSERT_TRUE(hp.ok()) << hp.status();
  EXPECT_EQ(hp->host, "::1");
  EXPECT_EQ(hp->port, 65535);
  EXPECT_EQ(HostPortString(*hp), "[::1]:65535");
}

TEST(BackendUrlTest, AcceptsHttpsForTls) {
  absl::StatusOr<HttpHostPort> hp = ParseBackendUrl("HTTPS://vllm-0.local:8443/");
  ASSERT_TRUE(hp.ok()) << hp.status();
  EXPECT_TRUE(hp->tls);
  EXPECT_EQ(hp->host, "vllm-0.local");
  EXPECT_EQ(hp->port, 8443);
  EXPECT_EQ(CanonicalBackendUrl(*hp), "https://vllm-0.local:8443");
  EXPECT_EQ(HostPortString(*hp), "vllm-0.local:8443");
  EXPECT_FALSE(ParseBackendUrl("http://a:1")->tls);
}

TEST(BackendUrlTest, RejectsEverythingElseSayingWhy) {
  struct Case {
    std::string url;
    std::string why;
  };
  const Case cases[] = {
      {"ftp://x", "the scheme must be http:// or https://"},
      {"httpss://a:1", "the scheme must be http:// or https://"},
      {"127.0.0.1:8001", "the scheme must be http:// or https://"},
      {"https://a", "missing :port"},
      {"http://a", "missing :port"},
      {"http://a/v1", "a path or query is not allowed"},
      {"http://a:8001/v1", "a path or query is not allowed"},
      {"http://a:8001?x=1", "a path or query is not allowed"},
      {"http://a:", "missing port"},
      {"http://:8001", "missing host"},
      {"http://user@a:8001", "user info is not allowed"},
      {"http://a b:8001", "invalid character in the host"},
      {"http://a:0", "the port must be in [1, 65535]"},
      {"http://a:65536", "the port must be in [1, 65535]"},
      {"http://a:99999999999999999999", "the port must be in [1, 65535]"},
      {"http://a:80x", "the port must be a number"},
      {"http://a:-1", "the port must be a number"},
      {"http://[::1:8001", "unclosed '['"},
      {"http://[::1]", "missing :port"},
      {"http://[host]:1", "expected an IPv6 address"},
      {"http://", "missing :port"},
  };
  for (const Case& c : cases) {
    absl::Status status = ParseBackendUrl(c.url).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.url;
    EXPECT_THAT(status.message(), HasSubstr("expected http://host:port or https://host:port, "
                                            "got '" + c.url + "'"))
        << c.url;
    EXPECT_THAT(status.message(), HasSubstr(c.why)) << c.url;
  }
}

}  // namespace
}  // namespace warmroute::gateway
