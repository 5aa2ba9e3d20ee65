#include "gateway/proxy/normalize.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace warmroute::gateway {
namespace {

using request::Endpoint;

constexpr size_t kCollapse = static_cast<size_t>(NormalizeRule::kCollapseWhitespace);
constexpr size_t kTools = static_cast<size_t>(NormalizeRule::kCanonicalTools);
constexpr size_t kMove = static_cast<size_t>(NormalizeRule::kMoveToEnd);

NormalizeEntry Entry(std::string tenant, std::string model) {
  NormalizeEntry e;
  e.tenant = std::move(tenant);
  e.model = std::move(model);
  return e;
}

MoveToEndPattern Pattern(const std::string& text) {
  return {text, std::shared_ptr<const tokenize::Regex>(tokenize::Regex::Compile(text).value())};
}

NormalizeConfig AllRules(std::string tenant = "", std::string model = "") {
  NormalizeEntry e = Entry(std::move(tenant), std::move(model));
  e.collapse_whitespace = true;
  e.canonical_tools = true;
  e.move_to_end.push_back(Pattern("^Current time: .*$"));
  return {.entries = {e}};
}

TEST(RemoveMatchingLinesTest, RemovesWholeLinesInOrder) {
  const auto time = tokenize::Regex::Compile("^Current time: ").value();
  const auto id = tokenize::Regex::Compile("^Request id:").value();
  std::vector<std::string> moved;
  EXPECT_EQ(RemoveMatchingLines("Current time: 10:00\nA\nRequest id: 7\nB",
                                {time.get(), id.get()}, moved),
            "A\nB");
  EXPECT_EQ(moved, (std::vector<std::string>{"Current time: 10:00", "Request id: 7"}));
  moved.clear();
  EXPECT_EQ(RemoveMatchingLines("A\nCurrent time: x", {time.get()}, moved), "A");
  EXPECT_EQ(RemoveMatchingLines("no match here", {time.get()}, moved), "no match here");
  EXPECT_EQ(moved.size(), 1u);
}

// With std::regex, a `.*` pattern on a 100 KB line overflowed the stack (a recursion per
// character): one client's long system-prompt line took the gateway down.
TEST(RemoveMatchingLinesTest, AVeryLongLineIsSearchedWithoutOverflowingTheStack) {
  const auto time = tokenize::Regex::Compile("^Current time: .*$").value();
  std::vector<std::string> moved;
  const std::string line = "Current time: " + std::string(4 << 20, 'x');
  EXPECT_EQ(RemoveMatchingLines("A\n" + line, {time.get()}, moved), "A");
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].size(), line.size());
}

TEST(NormalizeBodyTest, CollapsesSystemWhitespaceOnlyAndKeepsOtherBytes) {
  const std::string body =
      R"({"model":"m",  "messages": [ {"role":"system","content":"Be   brief.  \n\n\n\nBe kind. "},)"
      R"( {"role":"user","content":"x    y \u00e9"}], "temperature":0.50})";
  const Normalized n = NormalizeBody(AllRules(), "", Endpoint::kChatCompletions, body);
  ASSERT_TRUE(n.body.has_value());
  EXPECT_EQ(*n.body,
            R"({"model":"m",  "messages": [ {"role":"system","content":"Be brief.\n\nBe kind."},)"
            R"( {"role":"user","content":"x    y \u00e9"}], "temperature":0.50})");
  EXPECT_TRUE(n.applied[kCollapse]);
  EXPECT_FALSE(n.applied[kTools]);
  EXPECT_FALSE(n.applied[kMove]);
}

TEST(NormalizeBodyTest, CollapsesDeveloperTextPartsAndSkipsOtherParts) {
  const std::string body =
      R"({"model":"m","messages":[{"content":[{"text":"a   b  ","type":"text"},)"
      R"({"type":"image_url","image_url":{"url":"data:x  y"}}],"role":"developer"},)"
      R"({"role":"user","content":[{"type":"text","text":"q  q"}]}]})";
  const Normalized n = NormalizeBody(AllRules(), "", Endpoint::kChatCompletions, body);
  ASSERT_TRUE(n.body.has_value());
  EXPECT_EQ(*n.body, R"({"model":"m","messages":[{"content":[{"text":"a b","type":"text"},)"
                     R"({"type":"image_url","image_url":{"url":"data:x  y"}}],"role":"developer"},)"
                     R"({"role":"user","content":[{"type":"text","text":"q  q"}]}]})");
}

TEST(NormalizeBodyTest, CanonicalToolsSortsKeysAndKeepsTheRest) {
  const std::string body =
      R"({"tools": [{"type":"function","function":{"parameters":{"type":"object"},"name":"f"}}],)"
      R"( "model":"m","messages":[{"role":"user","content":"hi"}]})";
  const Normalized n = NormalizeBody(AllRules(), "", Endpoint::kChatCompletions, body);
  ASSERT_TRUE(n.body.has_value());
  EXPECT_EQ(
      *n.body,
      R"({"tools": [{"function":{"name":"f","parameters":{"type":"object"}},"type":"function"}],)"
      R"( "model":"m","messages":[{"role":"user","content":"hi"}]})");
  EXPECT_TRUE(n.applied[kTools]);
  EXPECT_FALSE(n.applied[kCollapse]);
}

TEST(NormalizeBodyTest, CanonicalToolsAlsoRewritesLegacyFunctions) {
  const std::string body =
      R"({"model":"m","messages":[],"functions":[{"name":"f","description":"d"}]})";
  const Normalized n = NormalizeBody(AllRules(), "", Endpoint::kChatCompletions, body);
  ASSERT_TRUE(n.body.has_value());
  EXPECT_EQ(*n.body, R"({"model":"m","messages":[],"functions":[{"description":"d","name":"f"}]})");
}

TEST(NormalizeBodyTest, MovesTheMatchingLineToTheEndOfTheLastUserMessage) {
  const std::string body =
      R"({"model":"m","messages":[{"role":"system","content":"Current time: 2026-03-14T09:00Z\nYou help."},)"
      R"({"role":"user","content":"first"},{"role":"assistant","content":"ok"},)"
      R"({"role":"user","content":"second"}]})";
  const Normalized n = NormalizeBody(AllRules(), "", Endpoint::kChatCompletions, body);
  ASSERT_TRUE(n.body.has_value());
  EXPECT_EQ(*n.body, R"({"model":"m","messages":[{"role":"system","content":"You help."},)"
                     R"({"role":"user","content":"first"},{"role":"assistant","content":"ok"},)"
                     R"({"role":"user","content":"second\nCurrent time: 2026-03-14T09:00Z"}]})");
  EXPECT_TRUE(n.applied[kMove]);
  EXPECT_FALSE(n.applied[kCollapse]);
}

TEST(NormalizeBodyTest, MovesNothingWithoutAUserMessage) {
  const std::string body =
      R"({"model":"m","messages":[{"role":"system","content":"Current time: 09:00\nYou help."}]})";
  NormalizeConfig config;
  NormalizeEntry e;
  e.move_to_end.push_back(Pattern("^Current time: "));
  config.entries.push_back(e);
  const Normalized n = NormalizeBody(config, "", Endpoint::kChatCompletions, body);
  EXPECT_FALSE(n.body.has_value());
  EXPECT_FALSE(n.applied[kMove]);
}

TEST(NormalizeBodyTest, ACleanBodyIsUnchanged) {
  const std::string body =
      R"({"model":"m","tools":[{"function":{"name":"f"},"type":"function"}],)"
      R"("messages":[{"role":"system","content":"You help.\n\nBe brief."},{"role":"user","content":"hi"}]})";
  const Normalized n = NormalizeBody(AllRules(), "", Endpoint::kChatCompletions, body);
  EXPECT_FALSE(n.body.has_value());
  EXPECT_EQ(n.applied, (std::array<bool, kNormalizeRuleCount>{}));
}

TEST(NormalizeBodyTest, OnlyTheConfiguredTenantAndModel) {
  const std::string body =
      R"({"model":"llama","messages":[{"role":"system","content":"a  b"},{"role":"user","content":"q"}]})";
  const NormalizeConfig for_acme = AllRules("acme");
  EXPECT_TRUE(NormalizeBody(for_acme, "acme", Endpoint::kChatCompletions, body).body);
  EXPECT_FALSE(NormalizeBody(for_acme, "other", Endpoint::kChatCompletions, body).body);
  EXPECT_FALSE(NormalizeBody(for_acme, "", Endpoint::kChatCompletions, body).body);
  const NormalizeConfig for_llama = AllRules("", "llama");
  EXPECT_TRUE(NormalizeBody(for_llama, "anyone", Endpoint::kChatCompletions, body).body);
  const NormalizeConfig for_qwen = AllRules("", "qwen");
  EXPECT_FALSE(NormalizeBody(for_qwen, "anyone", Endpoint::kChatCompletions, body).body);
  const NormalizeConfig both = AllRules("acme", "llama");
  EXPECT_TRUE(NormalizeBody(both, "acme", Endpoint::kChatCompletions, body).body);
  EXPECT_FALSE(NormalizeBody(both, "other", Endpoint::kChatCompletions, body).body);
}

TEST(NormalizeBodyTest, RulesForIsTheUnionOfMatchingEntries) {
  NormalizeConfig config;
  NormalizeEntry a = Entry("acme", "");
  a.collapse_whitespace = true;
  NormalizeEntry b = Entry("", "llama");
  b.canonical_tools = true;
  config.entries = {a, b};
  const NormalizeRules both = RulesFor(config, "acme", "llama");
  EXPECT_TRUE(both.collapse_whitespace && both.canonical_tools);
  const NormalizeRules one = RulesFor(config, "acme", "qwen");
  EXPECT_TRUE(one.collapse_whitespace);
  EXPECT_FALSE(one.canonical_tools);
  EXPECT_FALSE(RulesFor(config, "other", "qwen").any());
  EXPECT_TRUE(MayNormalize(config, "other"));  // b may match by model
  config.entries = {a};
  EXPECT_FALSE(MayNormalize(config, "other"));
}

TEST(NormalizeBodyTest, UnreadableBodiesPassUnchanged) {
  const NormalizeConfig config = AllRules();
  for (const std::string& body :
       {std::string("{not json"), std::string("[1,2]"), std::string(R"({"messages":"x"})"),
        std::string(R"({"model":"m","messages":[{"role":"system","content":"a  b"}]} trailing)"),
        std::string(R"({"model":"m","messages":[{"role":7,"content":"a  b"}]})"), std::string()}) {
    const Normalized n = NormalizeBody(config, "", Endpoint::kChatCompletions, body);
    EXPECT_FALSE(n.body.has_value()) << body;
  }
}

TEST(NormalizeBodyTest, LegacyCompletionsAreNeverRewritten) {
  const std::string body = R"({"model":"m","prompt":"Current time: 1\na   b"})";
  EXPECT_FALSE(NormalizeBody(AllRules(), "", Endpoint::kCompletions, body).body);
}

TEST(NormalizeBodyTest, ResponsesInstructionsAndStringInput) {
  const std::string body =
      R"({"model":"m","instructions":"Current time: 09:00\nYou   help.","input":"hi",)"
      R"("tools":[{"type":"function","name":"f"}]})";
  const Normalized n = NormalizeBody(AllRules(), "", Endpoint::kResponses, body);
  ASSERT_TRUE(n.body.has_value());
  EXPECT_EQ(*n.body, R"({"model":"m","instructions":"You help.","input":"hi\nCurrent time: 09:00",)"
                     R"("tools":[{"name":"f","type":"function"}]})");
  EXPECT_TRUE(n.applied[kMove] && n.applied[kCollapse] && n.applied[kTools]);
}

TEST(NormalizeBodyTest, ResponsesInputItems) {
  const std::string body =
      R"({"model":"m","input":[{"role":"developer","content":"Current time: 09:00\nRules  here"},)"
      R"({"type":"message","role":"user","content":[{"type":"input_text","text":"q"}]}]})";
  const Normalized n = NormalizeBody(AllRules(), "", Endpoint::kResponses, body);
  ASSERT_TRUE(n.body.has_value());
  EXPECT_EQ(
      *n.body,
      R"({"model":"m","input":[{"role":"developer","content":"Rules here"},)"
      R"({"type":"message","role":"user","content":[{"type":"input_text","text":"q\nCurrent time: 09:00"}]}]})");
}

TEST(NormalizeBodyTest, MessagesApiSystemBlocks) {
  const std::string body =
      R"({"model":"m","max_tokens":9,"system":[{"type":"text","text":"Current time: 9\nBe  kind."}],)"
      R"("messages":[{"role":"user","content":"hello"}]})";
  const Normalized n = NormalizeBody(AllRules(), "", Endpoint::kMessages, body);
  ASSERT_TRUE(n.body.has_value());
  EXPECT_EQ(*n.body, R"({"model":"m","max_tokens":9,"system":[{"type":"text","text":"Be kind."}],)"
                     R"("messages":[{"role":"user","content":"hello\nCurrent time: 9"}]})");
}

TEST(NormalizeBodyTest, EditedTextIsEscapedAsJson) {
  const std::string body =
      R"({"model":"m","messages":[{"role":"system","content":"say \"hi\"   \u00e9\t\\ ok  "}]})";
  const Normalized n = NormalizeBody(AllRules(), "", Endpoint::kChatCompletions, body);
  ASSERT_TRUE(n.body.has_value());
  EXPECT_EQ(*n.body,
            "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"say \\\"hi\\\" "
            "\xc3\xa9 \\\\ ok\"}]}");
}

TEST(NormalizeBodyTest, ABodyOverAMegabyteIsNormalisedToo) {
  const std::string policy(1 << 21, 'p');
  const std::string body = R"({"model":"m","messages":[{"role":"system","content":")" + policy +
                           R"(   "},{"role":"user","content":"q"}]})";
  const Normalized n = NormalizeBody(AllRules(), "", Endpoint::kChatCompletions, body);
  ASSERT_TRUE(n.body.has_value());
  EXPECT_EQ(*n.body, R"({"model":"m","messages":[{"role":"system","content":")" + policy +
                         R"("},{"role":"user","content":"q"}]})");
}

}  // namespace
}  // namespace warmroute::gateway
