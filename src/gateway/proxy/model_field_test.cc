#include "gateway/proxy/model_field.h"

#include <gtest/gtest.h>

#include "common/status.h"

namespace warmroute::gateway {
namespace {

TEST(ModelOfBodyTest, ReadsTheTopLevelModelOnly) {
  EXPECT_EQ(*ModelOfBody(R"({"input":["a","b"],"model":"bge-m3"})"), "bge-m3");
  EXPECT_EQ(*ModelOfBody(R"({"input":{"model":"inner"}})"), "");
  EXPECT_EQ(*ModelOfBody(R"({"model":null,"input":"x"})"), "");
  EXPECT_EQ(*ModelOfBody("{}"), "");
}

TEST(ModelOfBodyTest, ABodyThatIsNotAnObjectOrAModelThatIsNotAStringIs400) {
  for (const char* body : {"", "[1]", "\"text\"", "{", "not json"}) {
    EXPECT_EQ(ModelOfBody(body).status().code(), absl::StatusCode::kInvalidArgument) << body;
  }
  const absl::Status number = ModelOfBody(R"({"model":7})").status();
  EXPECT_EQ(number.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParamOf(number), "model");
}

}  // namespace
}  // namespace warmroute::gateway
