#include "gateway/config/config_document.h"

#include <cmath>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::gateway {
namespace {

using ::testing::HasSubstr;
using Type = ConfigNode::Type;

const ConfigNode& ValueOf(const ConfigNode& map, std::string_view key) {
  for (const auto& [k, v] : map.entries) {
    if (k == key) return v;
  }
  ADD_FAILURE() << "no key " << key;
  static const ConfigNode kNull;
  return kNull;
}

TEST(ConfigDocumentTest, ResolvesYamlPlainScalarsAndKeepsQuotedOnesAsStrings) {
  absl::StatusOr<ConfigNode> doc = ParseYamlDocument(R"(int: 8080
neg: -3
plus: +7
float: 1.25
exp: 1e3
yes: true
no: False
null1: ~
null2:
word: vllm
quoted_int: "8080"
single: 'true'
tagged: !!str 12
url: http://127.0.0.1:8001
inf: -.inf
big: 99999999999999999999
)");
  ASSERT_TRUE(doc.ok()) << doc.status();
  ASSERT_EQ(doc->type, Type::kMap);
  EXPECT_EQ(ValueOf(*doc, "int").type, Type::kInt);
  EXPECT_EQ(ValueOf(*doc, "int").int_value, 8080);
  EXPECT_TRUE(ValueOf(*doc, "int").plain);
  EXPECT_EQ(ValueOf(*doc, "neg").int_value, -3);
  EXPECT_EQ(ValueOf(*doc, "plus").int_value, 7);
  EXPECT_EQ(ValueOf(*doc, "float").type, Type::kDouble);
  EXPECT_EQ(ValueOf(*doc, "float").double_value, 1.25);
  EXPECT_EQ(ValueOf(*doc, "exp").double_value, 1000);
  EXPECT_EQ(ValueOf(*doc, "yes").type, Type::kBool);
  EXPECT_TRUE(ValueOf(*doc, "yes").bool_value);
  EXPECT_FALSE(ValueOf(*doc, "no").bool_value);
  EXPECT_EQ(ValueOf(*doc, "null1").type, Type::kNull);
  EXPECT_EQ(ValueOf(*doc, "null2").type, Type::kNull);
  EXPECT_EQ(ValueOf(*doc, "word").type, Type::kString);
  EXPECT_EQ(ValueOf(*doc, "word").text, "vllm");
  EXPECT_EQ(ValueOf(*doc, "quoted_int").type, Type::kString);
  EXPECT_FALSE(ValueOf(*doc, "quoted_int").plain);
  EXPECT_EQ(ValueOf(*doc, "single").type, Type::kString);
  EXPECT_EQ(ValueOf(*doc, "tagged").type, Type::kString);
  EXPECT_EQ(ValueOf(*doc, "url").text, "http://127.0.0.1:8001");
  EXPECT_EQ(ValueOf(*doc, "inf").double_value, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(ValueOf(*doc, "big").type, Type::kDouble);  // beyond int64
  EXPECT_EQ(ValueOf(*doc, "big").text, "99999999999999999999");
}

TEST(ConfigDocumentTest, KeepsOrderDuplicatesAndLines) {
  absl::StatusOr<ConfigNode> doc = ParseYamlDocument("b: 1\na:\n  - x\n  - {k: v}\nb: 2\n");
  ASSERT_TRUE(doc.ok()) << doc.status();
  ASSERT_EQ(doc->entries.size(), 3u);
  EXPECT_EQ(doc->entries[0].first, "b");
  EXPECT_EQ(doc->entries[1].first, "a");
  EXPECT_EQ(doc->entries[2].first, "b");
  EXPECT_EQ(doc->entries[2].second.line, 5);
  const ConfigNode& list = doc->entries[1].second;
  ASSERT_EQ(list.type, Type::kList);
  ASSERT_EQ(list.items.size(), 2u);
  EXPECT_EQ(list.items[0].line, 3);
  EXPECT_EQ(list.items[1].type, Type::kMap);
  EXPECT_EQ(list.items[1].line, 4);
}

TEST(ConfigDocumentTest, EmptyYamlIsNull) {
  absl::StatusOr<ConfigNode> doc = ParseYamlDocument("# only a comment\n");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->type, Type::kNull);
}

TEST(ConfigDocumentTest, YamlSyntaxErrorNamesLineAndColumn) {
  absl::Status status = ParseYamlDocument("listen:\n  port: 1\n bad: [1, 2\n").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("line 3, column"));
  EXPECT_THAT(status.message(), HasSubstr("YAML error"));
}

TEST(ConfigDocumentTest, RejectsNonScalarKeysAndRecursiveAliases) {
  absl::Status status = ParseYamlDocument("? [a, b]\n: 1\n").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("map keys must be strings"));

  status = ParseYamlDocument("a: &x [1, *x]\n").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
}

// Aliases expand: "billion laughs" must hit the node budget, not exhaust memory.
TEST(ConfigDocumentTest, AliasBombHitsTheNodeLimit) {
  std::string yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 8; ++i) {
    yaml += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) yaml += (j ? ", *a" : "*a") + std::to_string(i - 1);
    yaml += "]\n";
  }
  absl::Status status = ParseYamlDocument(yaml).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("more than 100000 values"));
}

TEST(ConfigDocumentTest, DeepNestingIsAnError) {
  const std::string yaml = std::string(100, '[') + std::string(100, ']');
  absl::Status status = ParseYamlDocument(yaml).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  const std::string json = std::string(100, '[') + std::string(100, ']');
  status = ParseJsonDocument(json).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("nested deeper than 64"));
}

TEST(ConfigDocumentTest, NestingTooDeepForTheYamlParserSaysSo) {
  absl::Status status = ParseYamlDocument(std::string(100000, '[')).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("nested too deeply"));  // (yaml-cpp says "bad file")
}

// A second document was ignored: its keys silently lost, a syntax error in it unnoticed.
TEST(ConfigDocumentTest, OneDocumentOnly) {
  for (const char* yaml :
       {"listen: {port: 0}\n---\nretries: 1\n", "retries: 1\n...\nretries: 2\n"}) {
    absl::Status status = ParseYamlDocument(yaml).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << yaml;
    EXPECT_THAT(status.message(), HasSubstr("line 3: a second YAML document")) << yaml;
  }
  EXPECT_EQ(ParseYamlDocument("a: 1\n---\nb: [\n").status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<ConfigNode> doc = ParseYamlDocument("---\nretries: 1\n");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->type, Type::kMap);
}

// Found by fuzzing (tests/fuzz, config_yaml): on a file that is or starts with a comma,
// yaml-cpp's parser yields documents for ever without reading on, and YAML::LoadAll collected
// them until memory ran out.
TEST(ConfigDocumentTest, AFileTheYamlParserIsStuckOnIsAnErrorNotAHang) {
  for (const char* yaml : {",", ",listen: {port: 0}\n", "retries: 1\n---\n,\n"}) {
    absl::Status status = ParseYamlDocument(yaml).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << yaml;
    EXPECT_THAT(status.message(), HasSubstr("line ")) << status;
  }
}

TEST(ConfigDocumentTest, ReadsJsonTypes) {
  absl::StatusOr<ConfigNode> doc = ParseJsonDocument(
      R"({"s": "8080", "i": -5, "d": 2.5, "b": true, "n": null, "l": [1], "m": {"k": 1},
          "u": 18446744073709551615})");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(ValueOf(*doc, "s").type, Type::kString);
  EXPECT_FALSE(ValueOf(*doc, "s").plain);
  EXPECT_EQ(ValueOf(*doc, "i").int_value, -5);
  EXPECT_EQ(ValueOf(*doc, "d").double_value, 2.5);
  EXPECT_TRUE(ValueOf(*doc, "b").bool_value);
  EXPECT_EQ(ValueOf(*doc, "n").type, Type::kNull);
  EXPECT_EQ(ValueOf(*doc, "l").items.size(), 1u);
  EXPECT_EQ(ValueOf(*doc, "m").entries.size(), 1u);
  EXPECT_EQ(ValueOf(*doc, "u").type, Type::kDouble);
  EXPECT_EQ(ValueOf(*doc, "i").line, 0);
}

TEST(ConfigDocumentTest, InvalidJsonIsInvalidArgument) {
  for (std::string_view json : {"", "{", "{\"a\": }", "[1, 2", "\xff"}) {
    absl::Status status = ParseJsonDocument(json).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << json;
    EXPECT_THAT(status.message(), HasSubstr("invalid JSON")) << json;
  }
}

}  // namespace
}  // namespace warmroute::gateway
