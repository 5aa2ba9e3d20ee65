#include "core/workload/workload.h"

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/request/tokenizer.h"
#include "core/workload/test_driver.h"
#include "gtest/gtest.h"

namespace warmroute::workload {
namespace {

WorkloadOptions Options(std::string name, int64_t num_requests = 60) {
  WorkloadOptions options;
  options.name = std::move(name);
  options.model = "m";
  options.num_requests = num_requests;
  options.rate_per_s = 20;
  options.num_tenants = 3;
  return options;
}

std::vector<std::string> Stream(const WorkloadOptions& options, uint64_t seed) {
  auto workload = MakeWorkload(options, seed);
  EXPECT_TRUE(workload.ok()) << workload.status();
  std::vector<std::string> out;
  for (const WorkloadRequest& r : Drain(**workload).requests) out.push_back(Describe(r));
  return out;
}

TEST(WorkloadTest, ListsTheBuiltInWorkloads) {
  EXPECT_EQ(WorkloadNames(), (std::vector<std::string>{"support-bot", "shared-prefix", "llmd-73",
                                                       "multi-turn", "agent", "unique"}));
}

TEST(WorkloadTest, EveryWorkloadIsDeterministicFromItsSeed) {
  for (const std::string& name : WorkloadNames()) {
    SCOPED_TRACE(name);
    const auto a = Stream(Options(name), 7);
    const auto b = Stream(Options(name), 7);
    const auto c = Stream(Options(name), 8);
    ASSERT_EQ(a.size(), 60u);
    EXPECT_EQ(a, b);
    ASSERT_EQ(c.size(), 60u);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NE(a[i], c[i]) << i;
  }
}

TEST(WorkloadTest, EveryRequestCarriesModelTenantAndContent) {
  for (const std::string& name : WorkloadNames()) {
    SCOPED_TRACE(name);
    auto workload = MakeWorkload(Options(name), 1);
    ASSERT_TRUE(workload.ok());
    const Drained drained = Drain(**workload);
    for (size_t i = 0; i < drained.requests.size(); ++i) {
      const WorkloadRequest& r = drained.requests[i];
      EXPECT_EQ(r.id, i);
      EXPECT_EQ(r.model, "m");
      EXPECT_TRUE(r.tenant == "t0" || r.tenant == "t1" || r.tenant == "t2") << r.tenant;
      EXPECT_GE(r.max_tokens, 1);
      if (r.endpoint == request::Endpoint::kCompletions) {
        EXPECT_FALSE(r.prompt.empty());
        EXPECT_TRUE(r.messages.empty());
      } else {
        EXPECT_FALSE(r.messages.empty());
        EXPECT_TRUE(r.prompt.empty());
      }
    }
    EXPECT_TRUE((*workload)->Done());
  }
}

TEST(WorkloadTest, OpenLoopArrivalsAreNondecreasing) {
  for (const std::string name : {"support-bot", "shared-prefix", "unique"}) {
    SCOPED_TRACE(name);
    auto workload = MakeWorkload(Options(name, 500), 3);
    ASSERT_TRUE(workload.ok());
    Duration last{0};
    int count = 0;
    while (auto r = (*workload)->Next()) {
      EXPECT_GE(r->arrival, last);
      last = r->arrival;
      ++count;
    }
    EXPECT_EQ(count, 500);
  }
}

TEST(WorkloadTest, PoissonArrivalsHaveTheRequestedMeanRate) {
  WorkloadOptions options = Options("unique", 10000);
  options.rate_per_s = 40;
  auto workload = MakeWorkload(options, 11);
  ASSERT_TRUE(workload.ok());
  Duration last{0};
  double sum_sq_gap = 0;
  while (auto r = (*workload)->Next()) {
    const double gap = ToSeconds(r->arrival - last);
    sum_sq_gap += gap * gap;
    last = r->arrival;
  }
  const double rate = 10000 / ToSeconds(last);
  EXPECT_NEAR(rate, 40, 40 * 0.05);
  // Exponential gaps: E[gap^2] = 2 / rate^2 (a fixed-gap stream would give 1 / rate^2).
  EXPECT_NEAR(sum_sq_gap / 10000, 2.0 / (40 * 40), 0.1 * 2.0 / (40 * 40));
}

TEST(WorkloadTest, DoneOnlyAfterTheLastRequest) {
  auto workload = MakeWorkload(Options("support-bot", 2), 1);
  ASSERT_TRUE(workload.ok());
  EXPECT_FALSE((*workload)->Done());
  EXPECT_TRUE((*workload)->Next().has_value());
  EXPECT_FALSE((*workload)->Done());
  EXPECT_TRUE((*workload)->Next().has_value());
  EXPECT_TRUE((*workload)->Done());
  EXPECT_FALSE((*workload)->Next().has_value());
}

TEST(WorkloadTest, ZeroRequestsIsImmediatelyDone) {
  for (const std::string name : {"support-bot", "multi-turn", "agent", "unique"}) {
    auto workload = MakeWorkload(Options(name, 0), 1);
    ASSERT_TRUE(workload.ok());
    EXPECT_TRUE((*workload)->Done()) << name;
    EXPECT_FALSE((*workload)->Next().has_value()) << name;
  }
}

TEST(WorkloadTest, RejectsUnknownNamesAndBadOptions) {
  auto unknown = MakeWorkload(Options("chatbot"), 1);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("chatbot"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("support-bot"), std::string::npos);

  WorkloadOptions options = Options("support-bot");
  options.rate_per_s = 0;
  EXPECT_NE(MakeWorkload(options, 1).status().message().find("rate_per_s"), std::string::npos);
  options = Options("support-bot");
  options.num_tenants = 0;
  EXPECT_NE(MakeWorkload(options, 1).status().message().find("num_tenants"), std::string::npos);
  options = Options("unique", -1);
  EXPECT_NE(MakeWorkload(options, 1).status().message().find("num_requests"), std::string::npos);
  options = Options("trace:/nonexistent");
  options.trace_speed = 0;
  EXPECT_NE(MakeWorkload(options, 1).status().message().find("trace_speed"), std::string::npos);
  options = Options("trace:/nonexistent");
  options.jitter_s = -1;
  EXPECT_NE(MakeWorkload(options, 1).status().message().find("jitter_s"), std::string::npos);
  EXPECT_EQ(MakeWorkload(Options("trace:"), 1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(WorkloadTest, RefusesARateWhoseArrivalsCannotBeRepresented) {
  // 60 requests at 1e-12 req/s would arrive over 6e13 s: Durations (int64 ns) overflow.
  WorkloadOptions options = Options("unique");
  options.rate_per_s = 1e-12;
  const absl::Status slow = ValidateWorkloadOptions(options);
  EXPECT_EQ(slow.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParamOf(slow), "rate_per_s");
  EXPECT_NE(slow.message().find("too low"), std::string::npos) << slow.message();
  options.rate_per_s = 60 / kMaxArrivalSeconds;  // exactly the longest span allowed
  EXPECT_TRUE(ValidateWorkloadOptions(options).ok());
  // Every option error names the option it is about.
  options = Options("unique");
  options.num_tenants = 0;
  EXPECT_EQ(ParamOf(ValidateWorkloadOptions(options)), "num_tenants");
}

TEST(WorkloadTest, BuildsATraceWorkloadByName) {
  const std::string path = ::testing::TempDir() + "/workload_test_trace.jsonl";
  {
    std::ofstream file(path);
    file << R"({"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]})"
         << "\n"
         << R"({"timestamp": 10, "input_length": 100, "output_length": 0, "hash_ids": [1]})"
         << "\n";
  }
  auto workload = MakeWorkload(Options("trace:" + path), 1);
  ASSERT_TRUE(workload.ok()) << workload.status();
  const Drained drained = Drain(**workload);
  ASSERT_EQ(drained.requests.size(), 2u);
  EXPECT_EQ(drained.requests[0].max_tokens, 5);
  EXPECT_EQ(drained.requests[1].max_tokens, 1);  // output_length 0 -> at least 1
  EXPECT_EQ(drained.requests[1].arrival, std::chrono::milliseconds(10));

  auto missing = MakeWorkload(Options("trace:/nonexistent/trace.jsonl"), 1);
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/trace.jsonl"), std::string::npos);
}

TEST(WorkloadParamsTest, NoParamsGiveTheDefaultStream) {
  for (const std::string& name : WorkloadNames()) {
    SCOPED_TRACE(name);
    WorkloadOptions options = Options(name);
    ASSERT_TRUE(options.params.empty());
    const auto defaults = Stream(options, 5);
    // Giving every default explicitly is the same as giving none.
    if (name == "support-bot") {
      options.params = {{"system_prompts", 16},
                        {"system_prompt_tokens", 3000},
                        {"zipf_exponent", 1.0},
                        {"question_tokens", 50},
                        {"max_tokens", 100}};
    } else if (name == "shared-prefix") {
      options.params = {{"groups", 64},
                        {"prompts_per_group", 16},
                        {"system_prompt_tokens", 2048},
                        {"question_tokens", 128},
                        {"output_tokens", 256},
                        {"user_questions", 0}};
    } else if (name == "llmd-73") {
      options.params = {{"groups", 150},
                        {"prompts_per_group", 5},
                        {"system_prompt_tokens", 6000},
                        {"question_tokens", 1200},
                        {"output_tokens", 1000},
                        {"user_questions", 1}};
    } else if (name == "multi-turn") {
      options.params = {{"turns_per_session", 5},       {"system_prompts", 4},
                        {"system_prompt_tokens", 1000}, {"min_user_tokens", 100},
                        {"max_user_tokens", 300},       {"answer_tokens", 200},
                        {"think_time_mean_s", 5.0}};
    } else if (name == "agent") {
      options.params = {{"agent_types", 4},          {"tool_definition_tokens", 6000},
                        {"task_tokens", 150},        {"tool_result_tokens", 300},
                        {"steps_per_trajectory", 8}, {"step_max_tokens", 150},
                        {"tool_latency_mean_s", 1.0}};
    } else {
      options.params = {{"prompt_tokens", 1000}, {"max_tokens", 100}};
    }
    EXPECT_EQ(Stream(options, 5), defaults);
  }
}

TEST(WorkloadParamsTest, SupportBotSystemPromptsOverrideSetsTheDistinctPrefixCount) {
  WorkloadOptions options = Options("support-bot", 5000);
  options.params = {{"system_prompts", 256}, {"zipf_exponent", 0}};
  auto workload = MakeWorkload(options, 1);
  ASSERT_TRUE(workload.ok()) << workload.status();
  std::set<std::string> prompts;
  for (const WorkloadRequest& r : Drain(**workload).requests) {
    prompts.insert(r.messages.at(0).content);
  }
  EXPECT_EQ(prompts.size(), 256u);

  options.params = {{"system_prompts", 2}};
  workload = MakeWorkload(options, 1);
  ASSERT_TRUE(workload.ok()) << workload.status();
  prompts.clear();
  for (const WorkloadRequest& r : Drain(**workload).requests) {
    prompts.insert(r.messages.at(0).content);
  }
  EXPECT_EQ(prompts.size(), 2u);
}

TEST(WorkloadParamsTest, LengthOverridesTakeEffect) {
  request::BuiltinTokenizer tokenizer;
  const auto tokens = [&tokenizer](const std::string& text) {
    return static_cast<int64_t>(tokenizer.Encode(text).size());
  };
  WorkloadOptions options = Options("support-bot", 20);
  options.params = {{"system_prompt_tokens", 500}, {"question_tokens", 7}, {"max_tokens", 33}};
  auto workload = MakeWorkload(options, 1);
  ASSERT_TRUE(workload.ok()) << workload.status();
  for (const WorkloadRequest& r : Drain(**workload).requests) {
    EXPECT_EQ(tokens(r.messages.at(0).content), 500);
    EXPECT_EQ(tokens(r.messages.at(1).content), 7);
    EXPECT_EQ(r.max_tokens, 33);
  }

  options = Options("unique", 10);
  options.params = {{"prompt_tokens", 64}, {"max_tokens", 5}};
  workload = MakeWorkload(options, 1);
  ASSERT_TRUE(workload.ok()) << workload.status();
  for (const WorkloadRequest& r : Drain(**workload).requests) {
    EXPECT_NEAR(tokens(r.prompt), 64, 1);  // the id word may take one token less
    EXPECT_EQ(r.max_tokens, 5);
  }

  options = Options("shared-prefix", 0);
  options.params = {{"groups", 3}, {"prompts_per_group", 4}, {"output_tokens", 9}};
  workload = MakeWorkload(options, 1);
  ASSERT_TRUE(workload.ok()) << workload.status();
  const Drained shared = Drain(**workload);
  EXPECT_EQ(shared.requests.size(), 12u);  // num_requests 0: groups x prompts_per_group
  std::set<std::string> prefixes;
  for (const WorkloadRequest& r : shared.requests) {
    prefixes.insert(r.prompt.substr(0, r.prompt.rfind("\n\n")));
    EXPECT_EQ(r.max_tokens, 9);
  }
  EXPECT_EQ(prefixes.size(), 3u);
}

TEST(WorkloadParamsTest, SessionLengthOverridesTakeEffect) {
  WorkloadOptions options = Options("multi-turn", 30);
  options.params = {{"turns_per_session", 3}, {"think_time_mean_s", 0}};
  EXPECT_EQ(RequestsPerArrival(options), 3);
  auto workload = MakeWorkload(options, 1);
  ASSERT_TRUE(workload.ok()) << workload.status();
  std::set<uint64_t> sessions;
  for (const WorkloadRequest& r : Drain(**workload).requests) {
    EXPECT_LT(r.turn, 3);
    sessions.insert(r.session);
  }
  EXPECT_EQ(sessions.size(), 10u);

  options = Options("agent", 30);
  options.params = {{"steps_per_trajectory", 2}};
  EXPECT_EQ(RequestsPerArrival(options), 2);
  workload = MakeWorkload(options, 1);
  ASSERT_TRUE(workload.ok()) << workload.status();
  sessions.clear();
  for (const WorkloadRequest& r : Drain(**workload).requests) sessions.insert(r.session);
  EXPECT_EQ(sessions.size(), 15u);

  EXPECT_EQ(RequestsPerArrival(Options("multi-turn")), 5);
  EXPECT_EQ(RequestsPerArrival(Options("agent")), 8);
  EXPECT_EQ(RequestsPerArrival(Options("support-bot")), 1);
}

TEST(WorkloadParamsTest, UnknownKeyIsRejectedByNameWithTheValidKeys) {
  WorkloadOptions options = Options("support-bot");
  options.params = {{"system_prompt", 300}};  // typo of system_prompts
  const absl::Status status = MakeWorkload(options, 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("\"system_prompt\""), std::string::npos) << status;
  EXPECT_NE(status.message().find("support-bot"), std::string::npos) << status;
  for (const char* key : {"system_prompts", "system_prompt_tokens", "zipf_exponent",
                          "question_tokens", "max_tokens"}) {
    EXPECT_NE(status.message().find(key), std::string::npos) << key << ": " << status;
  }
  EXPECT_EQ(ValidateWorkloadOptions(options), status);

  // A key of another workload is unknown here.
  options = Options("unique");
  options.params = {{"groups", 4}};
  EXPECT_NE(MakeWorkload(options, 1).status().message().find("\"groups\""), std::string::npos);

  // Traces take no parameters.
  options = Options("trace:/nonexistent/trace.jsonl");
  options.params = {{"system_prompts", 4}};
  const absl::Status trace = MakeWorkload(options, 1).status();
  EXPECT_EQ(trace.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(trace.message().find("system_prompts"), std::string::npos) << trace;
}

TEST(WorkloadParamsTest, OutOfRangeValuesAreRejectedByName) {
  const std::pair<std::string, WorkloadParams> bad[] = {
      {"support-bot", {{"system_prompts", -4}}},
      {"support-bot", {{"system_prompts", 0}}},
      {"support-bot", {{"system_prompts", 2.5}}},
      {"support-bot", {{"zipf_exponent", -1}}},
      {"support-bot", {{"system_prompt_tokens", 1e7}}},
      {"shared-prefix", {{"groups", 0}}},
      {"shared-prefix", {{"question_tokens", -1}}},
      {"multi-turn", {{"turns_per_session", 0}}},
      {"multi-turn", {{"think_time_mean_s", -0.5}}},
      {"multi-turn", {{"min_user_tokens", 400}}},  // above max_user_tokens = 300
      {"agent", {{"steps_per_trajectory", -8}}},
      {"agent", {{"tool_latency_mean_s", -1}}},
      {"unique", {{"prompt_tokens", 0}}},
  };
  for (const auto& [name, params] : bad) {
    WorkloadOptions options = Options(name);
    options.params = params;
    const absl::Status status = MakeWorkload(options, 1).status();
    const std::string& key = params.begin()->first;
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << name << " " << key;
    EXPECT_NE(status.message().find(name), std::string::npos) << status;
    EXPECT_NE(status.message().find(key), std::string::npos) << status;
  }
  // Too much generated text up front: 100k prompts of 3,000 tokens.
  WorkloadOptions options = Options("support-bot");
  options.params = {{"system_prompts", 100000}};
  const absl::Status status = MakeWorkload(options, 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("system_prompts x system_prompt_tokens"), std::string::npos)
      << status;
}

}  // namespace
}  // namespace warmroute::workload
