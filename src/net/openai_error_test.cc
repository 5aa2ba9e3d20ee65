#include "net/openai_error.h"

#include "common/status.h"
#include "gtest/gtest.h"

namespace warmroute::net {
namespace {

TEST(ToHttpErrorTest, InvalidParamIsBadRequestNamingTheParameter) {
  HttpError e = ToHttpError(InvalidParam("max_tokens", "max_tokens must be at least 1"));
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.body,
            R"({"error":{"message":"max_tokens must be at least 1","type":"BadRequestError",)"
            R"("param":"max_tokens","code":400}})");
}

TEST(ToHttpErrorTest, ParamIsNullWhenNoneIsAttached) {
  HttpError e = ToHttpError(absl::NotFoundError("The model `x` does not exist."));
  EXPECT_EQ(e.status, 404);
  EXPECT_EQ(e.body, R"({"error":{"message":"The model `x` does not exist.","type":"NotFoundError",)"
                    R"("param":null,"code":404}})");
}

TEST(ToHttpErrorTest, MapsEachStatusCodeToItsHttpStatus) {
  struct Case {
    absl::Status status;
    int http;
    const char* type;
  };
  const Case cases[] = {
      {absl::InvalidArgumentError("m"), 400, "BadRequestError"},
      {absl::FailedPreconditionError("m"), 400, "BadRequestError"},
      {absl::UnauthenticatedError("m"), 401, "AuthenticationError"},
      {absl::PermissionDeniedError("m"), 403, "PermissionDeniedError"},
      {absl::NotFoundError("m"), 404, "NotFoundError"},
      {absl::AlreadyExistsError("m"), 409, "ConflictError"},
      {absl::OutOfRangeError("m"), 413, "RequestTooLargeError"},
      {absl::ResourceExhaustedError("m"), 429, "RateLimitError"},
      {absl::InternalError("m"), 500, "InternalServerError"},
      {absl::UnknownError("m"), 500, "InternalServerError"},
      {absl::UnimplementedError("m"), 501, "NotImplementedError"},
      {absl::UnavailableError("m"), 503, "ServiceUnavailableError"},
      {absl::DeadlineExceededError("m"), 504, "GatewayTimeoutError"},
  };
  for (const Case& c : cases) {
    HttpError e = ToHttpError(c.status);
    EXPECT_EQ(e.status, c.http) << c.status;
    EXPECT_NE(e.body.find(std::string("\"type\":\"") + c.type + "\""), std::string::npos) << e.body;
    EXPECT_NE(e.body.find("\"code\":" + std::to_string(c.http) + "}"), std::string::npos) << e.body;
  }
}

TEST(ToHttpErrorTest, AnotherHttpStatusGivesItsOwnTypeAndCode) {
  struct Case {
    int http;
    const char* type;
  };
  const Case cases[] = {
      {405, "MethodNotAllowedError"},    {418, "BadRequestError"},
      {422, "UnprocessableEntityError"}, {431, "RequestHeaderFieldsTooLargeError"},
      {502, "BadGatewayError"},          {507, "InternalServerError"}};
  for (const Case& c : cases) {
    HttpError e = ToHttpError(absl::InvalidArgumentError("m"), c.http);
    EXPECT_EQ(e.status, c.http);
    EXPECT_EQ(e.body, std::string(R"({"error":{"message":"m","type":")") + c.type +
                          R"(","param":null,"code":)" + std::to_string(c.http) + "}}");
  }
}

TEST(ToHttpErrorTest, EscapesTheMessage) {
  HttpError e = ToHttpError(InvalidParam("prompt", "bad \"quote\"\n"));
  EXPECT_NE(e.body.find(R"("message":"bad \"quote\"\n")"), std::string::npos) << e.body;
}

TEST(ToHttpErrorTest, EmptyMessageFallsBackToTheCodeName) {
  HttpError e = ToHttpError(absl::Status(absl::StatusCode::kUnavailable, ""));
  EXPECT_NE(e.body.find(R"("message":"UNAVAILABLE")"), std::string::npos) << e.body;
}

}  // namespace
}  // namespace warmroute::net
