#include "net/http1/http_request.h"

#include "gtest/gtest.h"

namespace warmroute::net {
namespace {

TEST(HttpRequestTest, HeaderLookupIgnoresCase) {
  HttpRequest request;
  request.headers = {{"Content-Type", "application/json"}, {"X-Tenant", "a"}, {"x-tenant", "b"}};
  EXPECT_EQ(request.Header("content-type"), "application/json");
  EXPECT_EQ(request.Header("X-TENANT"), "a");
  EXPECT_EQ(request.Header("missing"), "");
}

TEST(IsHopByHopHeaderTest, TheSevenNamesInAnyCaseAndNothingElse) {
  for (const char* name : {"connection", "Keep-Alive", "TE", "trailer", "Transfer-Encoding",
                           "UPGRADE", "proxy-connection"}) {
    EXPECT_TRUE(IsHopByHopHeader(name)) << name;
  }
  // Same lengths as the hop-by-hop names, or one off, and the empty name.
  for (const char* name : {"", "t", "tf", "tea", "trailers", "upgrad", "connectio", "keep-alivf",
                           "content-length", "proxy-connectionx", "transfer-encodinG2",
                           "x-connection", "host", "content-type"}) {
    EXPECT_FALSE(IsHopByHopHeader(name)) << name;
  }
}

}  // namespace
}  // namespace warmroute::net
