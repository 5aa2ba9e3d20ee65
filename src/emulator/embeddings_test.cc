#include "emulator/embeddings.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "common/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simdjson.h"

namespace warmroute::emulator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

void ExpectInvalid(std::string_view body, std::string_view param, std::string_view part = "") {
  absl::StatusOr<EmbeddingsRequest> req = ParseEmbeddingsRequest(body);
  ASSERT_FALSE(req.ok()) << body;
  EXPECT_EQ(req.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParamOf(req.status()), std::optional<std::string>(std::string(param))) << req.status();
  EXPECT_THAT(std::string(req.status().message()), HasSubstr(std::string(part)));
}

double Dot(const std::vector<float>& a, const std::vector<float>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += double{a[i]} * double{b[i]};
  return sum;
}

TEST(EmbeddingsRequestTest, ReadsEveryInputShape) {
  absl::StatusOr<EmbeddingsRequest> req =
      ParseEmbeddingsRequest(R"({"model": "m", "input": "one text", "user": "u"})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->model, "m");
  ASSERT_EQ(req->inputs.size(), 1u);
  EXPECT_FALSE(req->inputs[0].is_tokens);
  EXPECT_EQ(req->inputs[0].text, "one text");
  EXPECT_FALSE(req->base64);

  req = ParseEmbeddingsRequest(R"({"input": ["a", "b"], "encoding_format": "base64"})");
  ASSERT_TRUE(req.ok()) << req.status();
  ASSERT_EQ(req->inputs.size(), 2u);
  EXPECT_EQ(req->inputs[1].text, "b");
  EXPECT_TRUE(req->base64);

  req = ParseEmbeddingsRequest(R"({"input": [5, 6, 7], "encoding_format": "float"})");
  ASSERT_TRUE(req.ok()) << req.status();
  ASSERT_EQ(req->inputs.size(), 1u);
  EXPECT_TRUE(req->inputs[0].is_tokens);
  EXPECT_THAT(req->inputs[0].tokens, ElementsAre(5, 6, 7));

  req = ParseEmbeddingsRequest(R"({"input": [[1, 2], [3]], "dimensions": 256})");
  ASSERT_TRUE(req.ok()) << req.status();
  ASSERT_EQ(req->inputs.size(), 2u);
  EXPECT_THAT(req->inputs[1].tokens, ElementsAre(3));
  EXPECT_EQ(req->dimensions, 256);
}

TEST(EmbeddingsRequestTest, RejectsBadBodies) {
  ExpectInvalid(R"({"model": "m"})", "input", "'input' is required");
  ExpectInvalid(R"({"input": ""})", "input", "cannot be empty");
  ExpectInvalid(R"({"input": []})", "input", "cannot be empty");
  ExpectInvalid(R"({"input": [[]]})", "input", "cannot be empty");
  ExpectInvalid(R"({"input": 3})", "input");
  ExpectInvalid(R"({"input": ["a", 1]})", "input", "input[1] must be a string");
  ExpectInvalid(R"({"input": [[1], "a"]})", "input", "input[1] must be an array of token ids");
  ExpectInvalid(R"({"input": [1, -2]})", "input", "input[1] is not a token id");
  ExpectInvalid(R"({"input": [[1, 2.5]]})", "input[0]", "input[0][1] is not a token id");
  ExpectInvalid(R"({"input": "a", "encoding_format": "bytes"})", "encoding_format");
  ExpectInvalid(R"({"input": "a", "dimensions": 0})", "dimensions");
  ExpectInvalid(R"({"input": "a", "model": 1})", "model");
  std::string many = R"({"input": [)";
  for (size_t i = 0; i <= kMaxEmbeddingInputs; ++i) many += i == 0 ? R"("x")" : R"(,"x")";
  ExpectInvalid(many + "]}", "input", "at most 2048 inputs");
  EXPECT_FALSE(ParseEmbeddingsRequest("[1]").ok());
  EXPECT_FALSE(ParseEmbeddingsRequest("{").ok());
}

TEST(EmbeddingOfTest, IsADeterministicUnitVector) {
  const std::vector<int32_t> tokens = {300, 301, 302, 303};
  const std::vector<float> v = EmbeddingOf(tokens, 64);
  ASSERT_EQ(v.size(), 64u);
  EXPECT_EQ(v, EmbeddingOf(tokens, 64));
  EXPECT_NEAR(Dot(v, v), 1.0, 1e-5);
  EXPECT_EQ(EmbeddingOf({}, 8), std::vector<float>(8, 0.0f));
}

TEST(EmbeddingOfTest, SharedTokensPointTheSameWay) {
  const std::vector<int32_t> a = {10, 11, 12, 13, 14, 15, 16, 17};
  const std::vector<int32_t> b = {10, 11, 12, 13, 14, 15, 16, 99};
  const std::vector<int32_t> c = {50, 51, 52, 53, 54, 55, 56, 57};
  const std::vector<float> va = EmbeddingOf(a, 256);
  EXPECT_GT(Dot(va, EmbeddingOf(b, 256)), 0.7);
  EXPECT_LT(std::abs(Dot(va, EmbeddingOf(c, 256))), 0.3);
}

TEST(Base64FloatsTest, EncodesLittleEndianFloat32) {
  const std::vector<float> v = {1.0f, -0.5f, 0.25f};
  std::string bytes;
  ASSERT_TRUE(absl::Base64Unescape(Base64Floats(v), &bytes));
  ASSERT_EQ(bytes.size(), 12u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[3]), 0x3f);  // 1.0f is 0x3f800000
  EXPECT_EQ(static_cast<unsigned char>(bytes[2]), 0x80);
  std::vector<float> back(3);
  std::memcpy(back.data(), bytes.data(), bytes.size());  // this machine is little-endian
  EXPECT_EQ(back, v);
}

TEST(EmbeddingsResponseTest, IsOpenAiShapedInBothEncodings) {
  const std::vector<std::vector<float>> vectors = {{0.6f, 0.8f}, {1.0f, 0.0f}};
  const EmbeddingsInfo info{.id = "embd-1", .created = 1700000000, .model = "m"};
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(EmbeddingsResponse(info, vectors, false, 7)).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(doc["object"]), "list");
  EXPECT_EQ(std::string_view(doc["id"]), "embd-1");
  EXPECT_EQ(std::string_view(doc["model"]), "m");
  EXPECT_EQ(int64_t(doc["usage"]["prompt_tokens"]), 7);
  EXPECT_EQ(int64_t(doc["usage"]["total_tokens"]), 7);
  const simdjson::dom::element second = doc["data"].at(1);
  EXPECT_EQ(std::string_view(second["object"]), "embedding");
  EXPECT_EQ(int64_t(second["index"]), 1);
  EXPECT_EQ(double(second["embedding"].at(0)), 1.0);
  EXPECT_NEAR(double(doc["data"].at(0)["embedding"].at(1)), 0.8, 1e-7);

  ASSERT_EQ(parser.parse(EmbeddingsResponse(info, vectors, true, 7)).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(doc["data"].at(0)["embedding"]), Base64Floats(vectors[0]));
}

}  // namespace
}  // namespace warmroute::emulator
