#include "core/workload/workload_params.h"

#include <string>

#include "common/status.h"
#include "gtest/gtest.h"

namespace warmroute::workload {
namespace {

struct Shape {
  int count = 3;
  int64_t tokens = 40;
  double skew = 1.5;
};

absl::Status Read(const WorkloadParams& params, Shape* shape) {
  ParamReader reader("demo", params);
  reader.Int("count", 1, 10, &shape->count);
  reader.Int("tokens", 1, 1000, &shape->tokens);
  reader.Double("skew", 0, 2, &shape->skew);
  reader.Require(shape->count * shape->tokens <= 1000, "count", "count x tokens too large");
  return reader.Finish();
}

TEST(ParamReaderTest, MissingKeysKeepTheDefaults) {
  Shape shape;
  ASSERT_TRUE(Read({}, &shape).ok());
  EXPECT_EQ(shape.count, 3);
  EXPECT_EQ(shape.tokens, 40);
  EXPECT_EQ(shape.skew, 1.5);
}

TEST(ParamReaderTest, GivenKeysOverrideTheDefaults) {
  Shape shape;
  ASSERT_TRUE(Read({{"count", 10}, {"tokens", 100}, {"skew", 0}}, &shape).ok());
  EXPECT_EQ(shape.count, 10);
  EXPECT_EQ(shape.tokens, 100);
  EXPECT_EQ(shape.skew, 0);
}

TEST(ParamReaderTest, UnknownKeyIsNamedWithTheValidKeys) {
  Shape shape;
  const absl::Status status = Read({{"count", 2}, {"colour", 1}}, &shape);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("\"colour\""), std::string::npos) << status;
  EXPECT_NE(status.message().find("demo"), std::string::npos) << status;
  EXPECT_NE(status.message().find("count, tokens, skew"), std::string::npos) << status;
  EXPECT_EQ(ParamOf(status), "colour");
}

TEST(ParamReaderTest, RejectsValuesOutOfRangeFractionsAndNonFinite) {
  const WorkloadParams bad[] = {{{"count", 0}},        {{"count", -1}},  {{"count", 11}},
                                {{"count", 2.5}},      {{"skew", -0.1}}, {{"skew", 2.01}},
                                {{"skew", 1.0 / 0.0}}, {{"tokens", 0}},  {{"tokens", 1e300}},
                                {{"skew", 0.0 / 0.0}}};
  for (const WorkloadParams& params : bad) {
    Shape shape;
    const absl::Status status = Read(params, &shape);
    const std::string key = params.begin()->first;
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << key;
    EXPECT_NE(status.message().find(key), std::string::npos) << status;
    EXPECT_EQ(ParamOf(status), key);
  }
}

TEST(ParamReaderTest, CrossKeyConditionsAreChecked) {
  Shape shape;
  const absl::Status status = Read({{"count", 10}, {"tokens", 101}}, &shape);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("count x tokens"), std::string::npos) << status;
}

TEST(ParamReaderTest, AReaderThatDeclaresNothingRejectsEveryKey) {
  const WorkloadParams params = {{"speed", 2}};
  const absl::Status status = ParamReader("trace:x.jsonl", params).Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("\"speed\""), std::string::npos) << status;
  EXPECT_NE(status.message().find("takes no parameters"), std::string::npos) << status;
}

}  // namespace
}  // namespace warmroute::workload
