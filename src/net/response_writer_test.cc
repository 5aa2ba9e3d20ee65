#include "net/response_writer.h"

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

}  // namespace
}  // namespace warmroute::net
