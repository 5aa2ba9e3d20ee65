#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "analyze/analysis_plots.h"
#include "analyze/analysis_report.h"
#include "analyze/prefix_hygiene.h"
#include "analyze/prefix_sharing.h"
#include "analyze/prompt_set.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::analyze {
namespace {

using ::testing::HasSubstr;

const std::string kPolicy = [] {
  std::string s;
  for (int i = 0; i < 20; ++i) {
    absl::StrAppend(&s, "Rule ", i, ": check the order history, quote the handbook, escalate.\n");
  }
  return s;
}();

// One chat request line with `system` as its system prompt.
std::string Chat(const std::string& system, const std::string& question, double t,
                 const std::string& extra = "") {
  std::string line = absl::StrCat(R"({"model":"m","timestamp":)", t, R"(,"messages":[)",
                                  R"({"role":"system","content":")");
  for (char c : system) {
    if (c == '\n') {
      line += "\\n";
    } else {
      line += c;
    }
  }
  absl::StrAppend(&line, R"("},{"role":"user","content":")", question, R"("}])", extra, "}\n");
  return line;
}

PromptSet Read(const std::string& text) {
  absl::StatusOr<PromptSet> set = ReadPromptSet("t.jsonl", text);
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *set : PromptSet{};
}

TEST(PromptSetTest, ReadsRequestsAndTracesAndNamesTheBadLine) {
  PromptSet set = Read(Chat(kPolicy, "a", 2) + "\n" + Chat(kPolicy, "b", 1) +
                       R"({"prompt":"once upon a time","tenant":"acme"})" + "\n");
  ASSERT_EQ(set.format, "requests");
  ASSERT_EQ(set.records.size(), 3u);
  EXPECT_EQ(set.records[0].line, 3);  // timestamp 1 sorts first
  EXPECT_EQ(set.records[2].tenant, "acme");
  EXPECT_DOUBLE_EQ(set.records[2].arrival_s, 2);  // a second after the line before
  EXPECT_FALSE(set.records[0].blocks.empty());

  PromptSet trace = Read(
      R"({"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": [0, 1, 2]})"
      "\n");
  EXPECT_EQ(trace.format, "mooncake");
  EXPECT_EQ(trace.records[0].blocks.size(), 2u);  // the partial third block is not cacheable

  for (const auto& [text, message] : std::vector<std::pair<std::string, std::string>>{
           {"{\"model\":\"m\"}\n", "t.jsonl:1: neither `messages`"},
           {Chat(kPolicy, "a", 0) + "[1]\n", "t.jsonl:2: not a JSON object"},
           {"{nope\n", "t.jsonl:1: invalid JSON"},
           {R"({"prompt":"x","timestamp":"noon"})", "t.jsonl:1: timestamp"},
           {R"({"prompt":"x","tenant":7})", "t.jsonl:1: tenant"},
           {"\n\n", "t.jsonl: empty file"}}) {
    absl::StatusOr<PromptSet> bad = ReadPromptSet("t.jsonl", text);
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr(message));
  }
}

TEST(PrefixSharingTest, CountsSharedBlocksGroupsAndReuseDistance) {
  std::string text;
  for (int i = 0; i < 10; ++i) text += Chat(kPolicy, absl::StrCat("question ", i), i);
  for (int i = 0; i < 10; ++i) {
    text += Chat(absl::StrCat("Unique prompt ", i, " ", std::string(400, 'a' + i)), "q", 10 + i);
  }
  const PromptSet set = Read(text);
  const SharingStats s = AnalyzeSharing(set, 16, 10);
  EXPECT_EQ(s.requests, 20);
  EXPECT_EQ(s.sharing_requests, 9);  // the policy prompts after the first
  EXPECT_DOUBLE_EQ(s.sharing_share, 0.45);
  // 9 of the 10 policy prompts' ~22 blocks are cached, none of the unique prompts' ~7.
  EXPECT_GT(s.infinite_cache_hit_rate, 0.55);
  EXPECT_LT(s.infinite_cache_hit_rate, 0.75);
  ASSERT_EQ(s.groups_total, 1);
  EXPECT_EQ(s.groups[0].requests, 10);
  EXPECT_DOUBLE_EQ(s.groups[0].reuse_distance_s, 1);
  EXPECT_DOUBLE_EQ(s.groups[0].reuse_distance_requests, 0);
}

// Three groups (5 requests 2 s apart, 3 requests 4 s apart, 2 requests 10 s apart) and two
// requests of their own.
std::string ThreeGroups() {
  std::string text;
  const auto add = [&](const std::string& team, double t) {
    text += Chat(absl::StrCat("You answer for team ", team, ".\n", kPolicy), "q", t);
  };
  for (double t : {0, 2, 4, 6, 8}) add("A", t);
  for (double t : {1, 5, 9}) add("B", t);
  for (double t : {3, 13}) add("C", t);
  add("D", 20);
  add("E", 21);
  return text;
}

TEST(PrefixSharingTest, KeepsEveryGroupsSizeAndReuseDistanceBeyondTheListedOnes) {
  const SharingStats s = AnalyzeSharing(Read(ThreeGroups()), 16, /*max_groups=*/1);
  ASSERT_EQ(s.groups_total, 3);
  ASSERT_EQ(s.groups.size(), 1u);
  ASSERT_EQ(s.all_groups.size(), 3u);
  EXPECT_EQ(s.all_groups[0].requests, s.groups[0].requests);
  EXPECT_DOUBLE_EQ(s.all_groups[0].reuse_distance_s, s.groups[0].reuse_distance_s);
  EXPECT_EQ(s.all_groups[0].requests, 5);
  EXPECT_DOUBLE_EQ(s.all_groups[0].reuse_distance_s, 2);
  EXPECT_EQ(s.all_groups[1].requests, 3);
  EXPECT_DOUBLE_EQ(s.all_groups[1].reuse_distance_s, 4);
  EXPECT_EQ(s.all_groups[2].requests, 2);
  EXPECT_DOUBLE_EQ(s.all_groups[2].reuse_distance_s, 10);
}

// The lines of `data` that are not comments.
std::vector<std::string> DataRows(const std::string& data) {
  std::vector<std::string> rows;
  for (absl::string_view line : absl::StrSplit(data, '\n', absl::SkipEmpty())) {
    if (line[0] != '#') rows.emplace_back(line);
  }
  return rows;
}

TEST(AnalysisPlotsTest, TheDataFilesHoldEveryGroupAndEveryFinding) {
  const SharingStats s = AnalyzeSharing(Read(ThreeGroups()), 16, 1);
  EXPECT_THAT(DataRows(PrefixGroupsData(s)), ::testing::ElementsAre("1 5 2", "2 3 4", "3 2 10"));
  EXPECT_THAT(DataRows(PrefixGroupsData(SharingStats{})), ::testing::IsEmpty());

  const auto finding = [](const std::string& kind, int64_t requests, double now, double fixed) {
    HygieneFinding f;
    f.kind = kind;
    f.requests = requests;
    f.hit_rate_now = now;
    f.hit_rate_fixed = fixed;
    return f;
  };
  const HygieneFinding uuid = finding("uuid", 47, 0.516, 0.74412);
  const HygieneFinding tools = finding("tools_key_order", 31, 0.516, 0.53);
  EXPECT_THAT(
      DataRows(HygieneData({uuid, tools})),
      ::testing::ElementsAre("uuid 51.6000 74.4120 47", "tools_key_order 51.6000 53.0000 31"));
  EXPECT_THAT(DataRows(HygieneData({})), ::testing::IsEmpty());
}

TEST(PrefixHygieneTest, FindsAnEarlyTimestampAndEstimatesTheFix) {
  std::string text;
  for (int i = 0; i < 30; ++i) {
    text += Chat(absl::StrCat("Current time: 2026-03-14T09:", 10 + i, ":00Z\n", kPolicy),
                 absl::StrCat("question ", i), i);
  }
  const PromptSet set = Read(text);
  const std::vector<HygieneFinding> findings = FindHygieneDefects(set);
  ASSERT_EQ(findings.size(), 1u);
  const HygieneFinding& f = findings[0];
  EXPECT_EQ(f.kind, "timestamp");
  EXPECT_EQ(f.requests, 30);
  EXPECT_THAT(f.example, HasSubstr("Current time: 2026-03-14T09:11:00Z"));
  EXPECT_THAT(f.example_other, HasSubstr("Current time: 2026-03-14T09:10:00Z"));
  EXPECT_GT(f.blocked_chars_mean, 1000);
  EXPECT_LT(f.hit_rate_now, 0.1);
  EXPECT_GT(f.hit_rate_fixed, 0.8);
}

TEST(PrefixHygieneTest, FindsToolsSerialisedInAnotherKeyOrder) {
  const std::string a = R"(,"tools":[{"type":"function","function":{"name":"f","parameters":{}}}])";
  const std::string b = R"(,"tools":[{"function":{"parameters":{},"name":"f"},"type":"function"}])";
  std::string text;
  for (int i = 0; i < 20; ++i) text += Chat(kPolicy, absl::StrCat("q", i), i, i % 4 == 3 ? b : a);
  const std::vector<HygieneFinding> findings = FindHygieneDefects(Read(text));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "tools_key_order");
  EXPECT_EQ(findings[0].requests, 5);
  EXPECT_GT(findings[0].hit_rate_fixed, findings[0].hit_rate_now);
}

TEST(PrefixHygieneTest, ACleanFileHasNoFinding) {
  std::string text;
  for (int i = 0; i < 30; ++i) {
    text += Chat(kPolicy, absl::StrCat("Current time: 09:", 10 + i, ". Hello, I am user ", i), i);
  }
  EXPECT_TRUE(FindHygieneDefects(Read(text)).empty());
}

// Some clients build the same system prompt with stray whitespace now and then (a template's
// trailing space, a doubled blank line): a finding of its own, since the fix is not moving a span.
TEST(PrefixHygieneTest, FindsWhitespaceThatDiffersEarlyInThePrompt) {
  std::string text;
  for (int i = 0; i < 30; ++i) {
    const std::string header =
        i % 3 == 0 ? "You are the support bot.  \n" : "You are the support bot.\n";
    text += Chat(header + kPolicy, absl::StrCat("question ", i), i);
  }
  const std::vector<HygieneFinding> findings = FindHygieneDefects(Read(text));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "whitespace");
  EXPECT_THAT(findings[0].advice, HasSubstr("collapse_whitespace"));
  EXPECT_GT(findings[0].hit_rate_fixed, findings[0].hit_rate_now);
}

TEST(PrefixHygieneTest, ClassifiesWhatVaries) {
  EXPECT_EQ(ClassifyDifference("Request: 123e4567-e89b-12d3-a456-426614174000",
                               "Request: 00000000-e89b-12d3-a456-426614174000"),
            "uuid");
  EXPECT_EQ(ClassifyDifference("Now: 2026-01-05 10:31", "Now: 2026-01-05 10:32"), "timestamp");
  EXPECT_EQ(ClassifyDifference("Today is March 5.", "Today is March 6."), "date");
  EXPECT_EQ(ClassifyDifference("trace abc123def456ghi", "trace zzz999yyy888xxx"), "request_id");
  EXPECT_EQ(ClassifyDifference("You have 12 messages", "You have 7 messages"), "number");
  EXPECT_EQ(ClassifyDifference("Hello Alice, welcome", "Hello Bob, welcome"), "per_user_text");
  EXPECT_EQ(ClassifyDifference("You are a pirate.", "You are a lawyer."), "varying_text");
  EXPECT_EQ(
      ClassifyDifference("You are a pirate. \n\n\nBe  kind.", "You are a pirate.\n\nBe kind."),
      "whitespace");
}

TEST(AnalysisReportTest, TheReportsSayTheSameThing) {
  std::string text;
  for (int i = 0; i < 30; ++i) {
    text += Chat(absl::StrCat("Hello User", std::string(1, static_cast<char>('A' + i % 26)),
                              "x, welcome back.\n", kPolicy),
                 "q", i);
  }
  const PromptSet set = Read(text);
  const AnalysisReport report{.source = "t.jsonl",
                              .set = &set,
                              .sharing = AnalyzeSharing(set, 16, 10),
                              .findings = FindHygieneDefects(set),
                              .fleet = std::nullopt,
                              .sizing = std::nullopt};
  ASSERT_FALSE(report.findings.empty());
  const std::string terminal = TerminalReport(report);
  EXPECT_THAT(terminal, HasSubstr("30 requests"));
  EXPECT_THAT(terminal, HasSubstr(absl::StrCat("[", report.findings[0].kind, "]")));
  const std::string markdown = MarkdownReport(report);
  EXPECT_THAT(markdown, HasSubstr("# Prefix analysis of `t.jsonl`"));
  EXPECT_THAT(markdown, HasSubstr("## Prefix hygiene"));
  const std::string json = JsonReport(report);
  EXPECT_THAT(json, HasSubstr(R"("requests":30)"));
  EXPECT_THAT(json, HasSubstr(absl::StrCat(R"("kind":")", report.findings[0].kind, R"(")")));
}

}  // namespace
}  // namespace warmroute::analyze
