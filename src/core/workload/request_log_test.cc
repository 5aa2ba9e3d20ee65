#include "core/workload/request_log.h"

#include <fstream>
#include <string>

#include "core/workload/mooncake_trace.h"
#include "gtest/gtest.h"

namespace warmroute::workload {
namespace {

constexpr const char* kLog =
    R"({"model":"m","timestamp":100.5,"tenant":"acme","max_tokens":7,)"
    R"("messages":[{"role":"system","content":"rules"},{"role":"user","content":"hi"}]})"
    "\n\n"
    R"({"model":"m","timestamp":100,"prompt":"once upon a time"})"
    "\n"
    R"({"model":"m","prompt":"later"})"
    "\n";

TEST(RequestLogTest, ParsesChatAndCompletionsWithTimestampsAndTenants) {
  absl::StatusOr<std::vector<LoggedRequest>> log = ParseRequestLog(kLog, "r.jsonl");
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_EQ(log->size(), 3u);
  EXPECT_EQ((*log)[0].line, 1);
  EXPECT_TRUE((*log)[0].has_tenant);
  EXPECT_EQ((*log)[0].tenant, "acme");
  EXPECT_EQ((*log)[0].request.messages.size(), 2u);
  EXPECT_EQ((*log)[1].line, 3);
  EXPECT_EQ((*log)[1].request.prompt, "once upon a time");
  EXPECT_DOUBLE_EQ((*log)[2].timestamp_s, 101);  // a second after the line before
  EXPECT_FALSE(LooksLikeMooncakeTrace(kLog));
  EXPECT_TRUE(LooksLikeMooncakeTrace("\n{\"timestamp\":0,\"hash_ids\":[1]}\n"));
}

TEST(RequestLogTest, ErrorsNameTheLine) {
  for (const auto& [text, message] : std::vector<std::pair<std::string, std::string>>{
           {"{\"model\":\"m\"}\n", "r.jsonl:1: neither `messages`"},
           {"[1]\n", "r.jsonl:1: not a JSON object"},
           {"{\"prompt\":\"x\"}\n{nope\n", "r.jsonl:2: invalid JSON"},
           {R"({"prompt":"x","timestamp":"noon"})", "r.jsonl:1: timestamp"},
           {R"({"prompt":"x","timestamp":1e300})", "r.jsonl:1: timestamp"},
           {R"({"prompt":"x","tenant":7})", "r.jsonl:1: tenant"},
           {R"({"prompt":[1,2,3]})", "r.jsonl:1: a prompt of token ids"},
           {R"({"messages":"hi"})", "r.jsonl:1: "},
           {"\n", "r.jsonl: no request"}}) {
    absl::StatusOr<std::vector<LoggedRequest>> log = ParseRequestLog(text, "r.jsonl");
    ASSERT_FALSE(log.ok()) << text;
    EXPECT_NE(std::string(log.status().message()).find(message), std::string::npos)
        << log.status().message();
  }
}

TEST(RequestLogTest, TraceWorkloadReplaysALogAtItsOwnTimestamps) {
  const std::string path = ::testing::TempDir() + "/requests.jsonl";
  std::ofstream(path) << kLog;
  WorkloadOptions options;
  options.name = "trace:" + path;
  options.num_requests = 0;
  options.trace_speed = 2;
  absl::StatusOr<std::unique_ptr<Workload>> w = MakeTraceWorkload(options, path, 1);
  ASSERT_TRUE(w.ok()) << w.status();
  std::vector<WorkloadRequest> out;
  while (auto r = (*w)->Next()) out.push_back(*r);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE((*w)->Done());
  // Earliest first, at (timestamp - earliest) / speed.
  EXPECT_EQ(out[0].prompt, "once upon a time");
  EXPECT_EQ(out[0].arrival, Duration{0});
  EXPECT_EQ(out[0].endpoint, request::Endpoint::kCompletions);
  EXPECT_EQ(out[0].max_tokens, 256);
  EXPECT_EQ(out[0].tenant, "t0");  // no tenant logged: t<line mod num_tenants>
  EXPECT_EQ(out[1].arrival, FromSeconds(0.25));
  EXPECT_EQ(out[1].tenant, "acme");
  EXPECT_EQ(out[1].max_tokens, 7);
  EXPECT_EQ(out[1].messages.size(), 2u);
  EXPECT_EQ(out[2].arrival, FromSeconds(0.5));
  EXPECT_EQ(out[2].model, "m");
}

}  // namespace
}  // namespace warmroute::workload
