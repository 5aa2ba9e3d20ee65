#include "net/url.h"

#include <gtest/gtest.h>

#include <string_view>
#include <variant>

namespace warmroute::net {
namespace {

// The parts of `url`, which must parse.
Url Parsed(std::string_view url) {
  std::variant<Url, UrlError> parsed = ParseUrl(url);
  if (const UrlError* error = std::get_if<UrlError>(&parsed)) {
    ADD_FAILURE() << url << ": " << UrlErrorText(*error);
    return Url{};
  }
  return std::get<Url>(parsed);
}

// Why `url` is refused; kNoScheme (with a failure) if it is not.
UrlError ErrorOf(std::string_view url) {
  std::variant<Url, UrlError> parsed = ParseUrl(url);
  if (const UrlError* error = std::get_if<UrlError>(&parsed)) return *error;
  ADD_FAILURE() << url << " was accepted";
  return UrlError::kNoScheme;
}

TEST(UrlTest, SplitsSchemeHostPortAndPath) {
  Url url = Parsed("http://127.0.0.1:8001");
  EXPECT_EQ(url.scheme, "http");
  EXPECT_EQ(url.host, "127.0.0.1");
  EXPECT_EQ(url.port, 8001);
  EXPECT_EQ(url.path, "");

  url = Parsed("http://vllm-0.pool_a.local/openai/v1/");
  EXPECT_EQ(url.host, "vllm-0.pool_a.local");
  EXPECT_EQ(url.port, std::nullopt);
  EXPECT_EQ(url.path, "/openai/v1/");  // as written: callers decide about trailing slashes

  url = Parsed("redis://cache:65535/");
  EXPECT_EQ(url.scheme, "redis");
  EXPECT_EQ(url.port, 65535);
  EXPECT_EQ(url.path, "/");

  EXPECT_EQ(Parsed("http://h:1/a@b").path, "/a@b");  // an '@' in the path is not user info
}

TEST(UrlTest, SchemesAreCaseInsensitiveAndComeOutLowerCase) {
  EXPECT_EQ(Parsed("HtTpS://h:1").scheme, "https");
  EXPECT_EQ(Parsed("svn+ssh://h").scheme, "svn+ssh");
  EXPECT_EQ(UrlScheme("REDIS://h"), "redis");
  EXPECT_EQ(UrlScheme("Http://"), "http");
  EXPECT_EQ(UrlScheme("127.0.0.1:8001"), "");
  EXPECT_EQ(UrlScheme("http:/h"), "");
  EXPECT_EQ(UrlScheme("1http://h"), "");  // a scheme starts with a letter
  EXPECT_EQ(UrlScheme(""), "");
  EXPECT_EQ(ErrorOf("127.0.0.1:8001"), UrlError::kNoScheme);
  EXPECT_EQ(ErrorOf("://h:1"), UrlError::kNoScheme);
}

TEST(UrlTest, ReadsIpv6LiteralsOnlyInBrackets) {
  Url url = Parsed("http://[::1]:8001/metrics");
  EXPECT_EQ(url.host, "::1");
  EXPECT_EQ(url.port, 8001);
  EXPECT_EQ(url.path, "/metrics");
  url = Parsed("http://[::FFFF:10.0.0.1]");
  EXPECT_EQ(url.host, "::FFFF:10.0.0.1");
  EXPECT_EQ(url.port, std::nullopt);

  EXPECT_EQ(ErrorOf("http://[::1:8001"), UrlError::kUnclosedBracket);
  EXPECT_EQ(ErrorOf("http://[]:80"), UrlError::kNotIpv6);
  EXPECT_EQ(ErrorOf("http://[vllm-0]:80"), UrlError::kNotIpv6);
  EXPECT_EQ(ErrorOf("http://[g::1]:80"), UrlError::kBadIpv6Char);
  EXPECT_EQ(ErrorOf("http://[fe80::1%eth0]:80"), UrlError::kBadIpv6Char);
  EXPECT_EQ(ErrorOf("http://[::1]8001"), UrlError::kJunkAfterBracket);
  // Without brackets the first ':' ends the host, and what follows is no port.
  EXPECT_EQ(ErrorOf("http://::1:8001"), UrlError::kPortNotNumber);
}

TEST(UrlTest, RefusesMissingZeroAndOutOfRangePorts) {
  EXPECT_EQ(Parsed("http://h:1").port, 1);
  EXPECT_EQ(Parsed("http://h:00080").port, 80);
  EXPECT_EQ(ErrorOf("http://h:"), UrlError::kEmptyPort);
  EXPECT_EQ(ErrorOf("http://h:/v1"), UrlError::kEmptyPort);
  EXPECT_EQ(ErrorOf("http://[::1]:"), UrlError::kEmptyPort);
  EXPECT_EQ(ErrorOf("http://h:0"), UrlError::kPortOutOfRange);
  EXPECT_EQ(ErrorOf("http://h:65536"), UrlError::kPortOutOfRange);
  EXPECT_EQ(ErrorOf("http://h:99999999999999999999"), UrlError::kPortOutOfRange);
  EXPECT_EQ(ErrorOf("http://h:80x"), UrlError::kPortNotNumber);
  EXPECT_EQ(ErrorOf("http://h:-1"), UrlError::kPortNotNumber);
  EXPECT_EQ(ErrorOf("http://h:+80"), UrlError::kPortNotNumber);
  EXPECT_EQ(ErrorOf("http://h: 80"), UrlError::kPortNotNumber);
  EXPECT_EQ(ErrorOf("http://h:1:2"), UrlError::kPortNotNumber);
}

TEST(UrlTest, RefusesBadHostNamesButNotAnEmptyHost) {
  EXPECT_EQ(ErrorOf("http://a b:80"), UrlError::kBadHostChar);
  EXPECT_EQ(ErrorOf("http://a%20b"), UrlError::kBadHostChar);
  EXPECT_EQ(ErrorOf("http://a[b]:80"), UrlError::kBadHostChar);
  EXPECT_EQ(ErrorOf("http://h\xc3\xa9:80"), UrlError::kBadHostChar);
  // Callers that need a host check for one.
  Url url = Parsed("http://:80");
  EXPECT_EQ(url.host, "");
  EXPECT_EQ(url.port, 80);
  EXPECT_EQ(Parsed("file:///etc/hosts").path, "/etc/hosts");
}

TEST(UrlTest, RefusesUserInfoQueriesAndFragments) {
  EXPECT_EQ(ErrorOf("http://user@h:80"), UrlError::kUserInfo);
  EXPECT_EQ(ErrorOf("redis://user:secret@h:6379"), UrlError::kUserInfo);
  EXPECT_EQ(ErrorOf("http://h:80?x=1"), UrlError::kQuery);
  EXPECT_EQ(ErrorOf("http://h/v1?x=1"), UrlError::kQuery);
  EXPECT_EQ(ErrorOf("http://h#top"), UrlError::kQuery);
  EXPECT_EQ(ErrorOf("http://user@h/?x"), UrlError::kQuery);  // checked first
}

TEST(UrlTest, WordsEachError) {
  EXPECT_EQ(UrlErrorText(UrlError::kUserInfo), "user info is not allowed");
  EXPECT_EQ(UrlErrorText(UrlError::kPortOutOfRange), "the port must be in [1, 65535]");
  EXPECT_EQ(UrlErrorText(UrlError::kNotIpv6), "expected an IPv6 address in brackets");
}

TEST(UrlTest, FormatsHostPortWithBracketsAroundIpv6) {
  EXPECT_EQ(HostPort("::1", 8001), "[::1]:8001");
  EXPECT_EQ(HostPort("127.0.0.1", 8001), "127.0.0.1:8001");
  EXPECT_EQ(HostPort("vllm-0.local", 80), "vllm-0.local:80");
}

}  // namespace
}  // namespace warmroute::net
