// Drives a Replica on a real io_context without sockets. time_scale is tiny, so every emulated
// step lasts nanoseconds of wall time: the tests never sleep and never assert on timing.
#include "emulator/replica.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <exception>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/engine/timing_model.h"
#include "core/engine/token_generator.h"
#include "core/request/tokenizer.h"
#include "gtest/gtest.h"

namespace warmroute::emulator {
namespace {

using engine::RequestEvent;

class ReplicaTest : public ::testing::Test {
 protected:
  ReplicaOptions Options() {
    ReplicaOptions options;
    options.model = "tiny";
    options.profile = *engine::FindTimingProfile("tiny");
    options.config = engine::DefaultEngineConfig(options.profile, /*kv_capacity_tokens=*/4096);
    options.config.max_model_len = 2048;
    options.time_scale = 1e-6;
    options.seed = 3;
    return options;
  }

  engine::EngineRequest Request(Replica& replica, int64_t max_tokens) {
    engine::EngineRequest r;
    r.id = replica.NewRequestId();
    r.prompt_tokens = prompt_;
    r.max_tokens = max_tokens;
    r.root_hash = 42;
    r.seed = 7;
    return r;
  }

  // Runs `body` on the io_context until it and everything it started have finished.
  void Run(net::Task<void> body) {
    std::exception_ptr failure;
    boost::asio::co_spawn(io_, std::move(body), [&](std::exception_ptr e) { failure = e; });
    io_.run();
    if (failure) std::rethrow_exception(failure);
  }

  // The value of the sample line starting with `name` in Prometheus text.
  static std::optional<double> Sample(const std::string& text, const std::string& name) {
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind(name, 0) == 0) return std::stod(line.substr(line.rfind(' ') + 1));
    }
    return std::nullopt;
  }

  boost::asio::io_context io_;
  request::BuiltinTokenizer tokenizer_;
  engine::TokenGenerator generator_{tokenizer_};
  // 50 tokens: three full blocks of 16 can be cached.
  std::vector<int32_t> prompt_ = [] {
    std::vector<int32_t> p;
    for (int32_t i = 0; i < 50; ++i) p.push_back(1000 + i);
    return p;
  }();
};

net::Task<std::vector<RequestEvent>> DrainEvents(RequestHandle& handle) {
  std::vector<RequestEvent> all;
  for (;;) {
    std::vector<RequestEvent> events = co_await handle.NextEvents();
    if (events.empty()) co_return all;
    all.insert(all.end(), events.begin(), events.end());
  }
}

TEST_F(ReplicaTest, DeliversEveryTokenThenFinishAndCachesThePrompt) {
  Replica replica(io_.get_executor(), Options(), generator_, nullptr);
  replica.Start();
  std::vector<std::vector<RequestEvent>> runs;
  Run([&]() -> net::Task<void> {
    for (int round = 0; round < 2; ++round) {
      absl::StatusOr<RequestHandle> handle = replica.Submit(Request(replica, 4));
      EXPECT_TRUE(handle.ok()) << handle.status();
      if (!handle.ok()) break;
      runs.push_back(co_await DrainEvents(*handle));
    }
    replica.Stop();
  }());
  ASSERT_EQ(runs.size(), 2u);
  for (size_t round = 0; round < runs.size(); ++round) {
    const std::vector<RequestEvent>& events = runs[round];
    ASSERT_EQ(events.size(), 5u);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(events[i].kind, RequestEvent::Kind::kToken);
      EXPECT_EQ(events[i].output_index, i);
      EXPECT_EQ(events[i].token, generator_.Token(7, i));
    }
    EXPECT_EQ(events[4].kind, RequestEvent::Kind::kFinished);
    EXPECT_EQ(events[4].output_index, 4);
    EXPECT_EQ(events[4].prompt_tokens, 50);
    // The second run finds the first's three full prompt blocks cached.
    EXPECT_EQ(events[4].cached_tokens, round == 0 ? 0 : 48);
  }
  EXPECT_EQ(replica.num_in_flight(), 0u);
}

TEST_F(ReplicaTest, RecordsLatenciesInTheMetrics) {
  Replica replica(io_.get_executor(), Options(), generator_, nullptr);
  replica.Start();
  Run([&]() -> net::Task<void> {
    absl::StatusOr<RequestHandle> handle = replica.Submit(Request(replica, 3));
    if (handle.ok()) co_await DrainEvents(*handle);
    replica.Stop();
  }());
  const std::string text = replica.MetricsText();
  EXPECT_EQ(Sample(text, "vllm:time_to_first_token_seconds_count"), 1.0) << text;
  EXPECT_EQ(Sample(text, "vllm:inter_token_latency_seconds_count"), 2.0) << text;
  EXPECT_EQ(Sample(text, "vllm:e2e_request_latency_seconds_count"), 1.0) << text;
  EXPECT_EQ(Sample(text, "vllm:generation_tokens_total"), 3.0) << text;
}

TEST_F(ReplicaTest, DroppingTheHandleAbortsTheRequestAndFreesItsBlocks) {
  Replica replica(io_.get_executor(), Options(), generator_, nullptr);
  replica.Start();
  absl::Status reset_while_running;
  absl::Status reset_after_abort;
  std::string metrics_after_abort;
  Run([&]() -> net::Task<void> {
    {
      absl::StatusOr<RequestHandle> handle = replica.Submit(Request(replica, 1000));
      if (!handle.ok()) co_return;
      std::vector<RequestEvent> first = co_await handle->NextEvents();
      EXPECT_FALSE(first.empty());
      reset_while_running = replica.ResetPrefixCache();
    }  // the handle is dropped mid-generation
    metrics_after_abort = replica.MetricsText();
    reset_after_abort = replica.ResetPrefixCache();
    replica.Stop();
  }());
  EXPECT_EQ(reset_while_running.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(reset_after_abort.ok()) << reset_after_abort;
  EXPECT_EQ(replica.num_in_flight(), 0u);
  EXPECT_EQ(Sample(metrics_after_abort, "vllm:num_requests_running"), 0.0);
  EXPECT_EQ(Sample(metrics_after_abort, "vllm:kv_cache_usage_perc"), 0.0);
}

TEST_F(ReplicaTest, RejectsAPromptLongerThanTheModelAllows) {
  Replica replica(io_.get_executor(), Options(), generator_, nullptr);
  engine::EngineRequest r = Request(replica, 16);
  r.prompt_tokens.assign(3000, 1000);
  absl::StatusOr<RequestHandle> handle = replica.Submit(std::move(r));
  EXPECT_EQ(handle.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParamOf(handle.status()), "prompt");
  EXPECT_EQ(replica.num_in_flight(), 0u);
}

TEST_F(ReplicaTest, StopEndsWaitingRequests) {
  Replica replica(io_.get_executor(), Options(), generator_, nullptr);
  replica.Start();
  std::vector<RequestEvent> after_stop{RequestEvent{}};
  Run([&]() -> net::Task<void> {
    absl::StatusOr<RequestHandle> handle = replica.Submit(Request(replica, 1000));
    if (!handle.ok()) co_return;
    co_await handle->NextEvents();
    replica.Stop();
    after_stop = co_await DrainEvents(*handle);
  }());
  EXPECT_TRUE(after_stop.empty());
  EXPECT_FALSE(replica.Submit(Request(replica, 4)).ok());
}

}  // namespace
}  // namespace warmroute::emulator
