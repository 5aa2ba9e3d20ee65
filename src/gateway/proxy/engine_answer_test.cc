#include "gateway/proxy/engine_answer.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "gtest/gtest.h"

namespace warmroute::gateway {
namespace {

TEST(JudgeStatusTest, RelaysSuccessesAndClientErrors) {
  for (int status : {200, 201, 204, 301, 304, 400, 404, 422, 429, 499}) {
    EXPECT_EQ(JudgeStatus(status), HeadVerdict::kRelay) << status;
  }
}

TEST(JudgeStatusTest, ServerErrorsAreFailedDispatches) {
  for (int status : {500, 502, 503, 504, 599}) {
    EXPECT_EQ(JudgeStatus(status), HeadVerdict::kFailed) << status;
  }
}

TEST(JudgeStatusTest, SwitchingProtocolsAndStatusesPast599AreInvalid) {
  for (int status : {101, 600, 700, 999}) {
    EXPECT_EQ(JudgeStatus(status), HeadVerdict::kInvalid) << status;
  }
}

TEST(InvalidStatusMessageTest, NamesTheBackendAndTheStatus) {
  EXPECT_EQ(InvalidStatusMessage("r0", 999),
            "backend r0 answered with the invalid HTTP status 999");
  EXPECT_EQ(InvalidStatusMessage("r1", 101),
            "backend r1 answered 101 Switching Protocols to a request that asked for no upgrade");
}

}  // namespace
}  // namespace warmroute::gateway

namespace warmroute::gateway {
namespace {

// An engine's error response as ShapeEngineError leaves it.
struct Shaped {
  net::ResponseHead head;
  std::string body;
};
Shaped Shape(int status, std::string content_type, std::string body, bool complete = true,
             net::HttpHeaders headers = {}) {
  Shaped out{.head = {.status = status,
                      .content_type = std::move(content_type),
                      .headers = std::move(headers)},
             .body = std::move(body)};
  ShapeEngineError("r0", complete, out.head, out.body);
  return out;
}

std::string OpenAiError(std::string_view message, std::string_view type, int code,
                        std::string_view param = "null") {
  return absl::StrCat(R"({"error":{"message":")", AbslView(message), R"(","type":")",
                      AbslView(type), R"(","param":)", AbslView(param), R"(,"code":)", code, "}}");
}

TEST(ShapeEngineErrorTest, AnOpenAiErrorIsRelayedUnchanged) {
  const std::string body =
      R"({"error":{"message":"max_tokens is too large","type":"BadRequestError",)"
      R"("param":"max_tokens","code":400}})";
  const Shaped shaped =
      Shape(400, "application/json; charset=utf-8", body, true, {{"x-request-id", "7"}});
  EXPECT_EQ(shaped.body, body);
  EXPECT_EQ(shaped.head.content_type, "application/json; charset=utf-8");
  EXPECT_EQ(shaped.head.headers, (net::HttpHeaders{{"x-request-id", "7"}}));
  EXPECT_EQ(Shape(404, "application/json", R"({"error":"nf"})").body, R"({"error":"nf"})");
}

TEST(ShapeEngineErrorTest, HtmlIsWrappedWithItsTextAndTheHeadersOfItsBodyDropped) {
  const Shaped shaped =
      Shape(500, "text/html", "<html><body><h1>Oops</h1>\n<p>it\tbroke</p></body></html>", true,
            {{"Content-Encoding", "identity"},
             {"ETag", "\"x\""},
             {"Retry-After", "3"},
             {"content-language", "en"}});
  EXPECT_EQ(shaped.head.status, 500);
  EXPECT_EQ(shaped.head.content_type, "application/json");
  EXPECT_EQ(shaped.body,
            OpenAiError("backend r0 answered 500: Oops it broke", "InternalServerError", 500));
  EXPECT_EQ(shaped.head.headers, (net::HttpHeaders{{"Retry-After", "3"}}));
}

TEST(ShapeEngineErrorTest, TextAndJsonWithoutErrorAreWrappedWithTheEnginesStatus) {
  EXPECT_EQ(Shape(400, "text/plain", "bad bad").body,
            OpenAiError("backend r0 answered 400: bad bad", "BadRequestError", 400));
  EXPECT_EQ(
      Shape(404, "application/json", R"({"detail":"Not Found"})").body,
      OpenAiError(R"(backend r0 answered 404: {\"detail\":\"Not Found\"})", "NotFoundError", 404));
  EXPECT_EQ(Shape(503, "", "").body, OpenAiError("backend r0 answered 503 with an empty body",
                                                 "ServiceUnavailableError", 503));
  EXPECT_EQ(Shape(500, "image/png; q=1", "\x89PNG").body,
            OpenAiError("backend r0 answered 500 with a body of type image/png",
                        "InternalServerError", 500));
}

TEST(ShapeEngineErrorTest, AnEventStreamIsWrappedWithoutItsBody) {
  const Shaped shaped = Shape(500, "text/event-stream", "", /*complete=*/false);
  EXPECT_EQ(shaped.head.content_type, "application/json");
  EXPECT_EQ(shaped.body, OpenAiError("backend r0 answered 500 with an event stream",
                                     "InternalServerError", 500));
}

TEST(ShapeEngineErrorTest, ABodyCutAtTheLimitIsWrappedEvenWhenItStartsAsAnError) {
  const std::string body = R"({"error":{"message":")" + std::string(300, 'x');
  const Shaped shaped = Shape(500, "application/json", body, /*complete=*/false);
  EXPECT_EQ(shaped.body, OpenAiError(absl::StrCat(R"(backend r0 answered 500: {\"error\":)",
                                                  R"({\"message\":\")", std::string(179, 'x'), "…"),
                                     "InternalServerError", 500));
}

TEST(ShapeEngineErrorTest, VllmsOlderErrorShapeKeepsItsMessageAndParam) {
  const Shaped shaped =
      Shape(400, "application/json",
            R"({"object":"error","message":"This model's maximum context length is 2048 tokens.",)"
            R"("type":"BadRequestError","param":"messages","code":400})");
  EXPECT_EQ(shaped.body, OpenAiError("This model's maximum context length is 2048 tokens.",
                                     "BadRequestError", 400, R"("messages")"));
}

TEST(BodyExcerptTest, ControlCharactersAndWhiteSpaceBecomeOneSpace) {
  EXPECT_EQ(BodyExcerpt("text/plain", "  a\r\n\x01\x7f b\t\tc  ", true), "a b c");
  EXPECT_EQ(BodyExcerpt("text/plain", "\n\n", true), "");
}

TEST(BodyExcerptTest, IsCutAtACharacterBoundary) {
  // 199 ASCII bytes, then a 2-byte character that would end past the limit.
  const std::string body = std::string(199, 'a') + "é and more";
  EXPECT_EQ(BodyExcerpt("text/plain", body, true), std::string(199, 'a') + "…");
  EXPECT_EQ(BodyExcerpt("text/plain", std::string(200, 'a'), true), std::string(200, 'a'));
  EXPECT_EQ(BodyExcerpt("text/plain", "short", /*complete=*/false), "short…");
}

TEST(BodyExcerptTest, NothingOfABodyThatIsNotText) {
  EXPECT_EQ(BodyExcerpt("application/octet-stream", "abc", true), "");
  EXPECT_EQ(BodyExcerpt("", "no type: taken as text", true), "no type: taken as text");
  EXPECT_EQ(BodyExcerpt("application/problem+json", R"({"a":1})", true), R"({"a":1})");
}

}  // namespace
}  // namespace warmroute::gateway
