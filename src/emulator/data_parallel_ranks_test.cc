// Drives two Replicas (two data-parallel ranks) on a real io_context without sockets, as
// replica_test.cc does: time_scale is tiny, the tests never sleep.
#include "emulator/data_parallel_ranks.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <exception>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/engine/timing_model.h"
#include "core/engine/token_generator.h"
#include "core/request/tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::emulator {
namespace {

using ::testing::HasSubstr;

// Waits until `handle`'s request has finished.
net::Task<int> Drain(RequestHandle& handle) {
  int batches = 0;
  while (!(co_await handle.NextEvents()).empty()) ++batches;
  co_return batches;
}

class DataParallelRanksTest : public ::testing::Test {
 protected:
  static ReplicaOptions Options(int index) {
    ReplicaOptions options;
    options.index = index;
    options.model = "tiny";
    options.profile = *engine::FindTimingProfile("tiny");
    options.config = engine::DefaultEngineConfig(options.profile, /*kv_capacity_tokens=*/4096);
    options.config.max_model_len = 2048;
    options.time_scale = 1e-6;
    options.seed = 3 + static_cast<uint64_t>(index);
    return options;
  }

  static engine::EngineRequest Request(Replica& replica, int64_t max_tokens) {
    engine::EngineRequest r;
    r.id = replica.NewRequestId();
    for (int32_t i = 0; i < 50; ++i) r.prompt_tokens.push_back(1000 + i);
    r.max_tokens = max_tokens;
    r.root_hash = 42;
    r.seed = 7;
    return r;
  }

  static net::HttpRequest WithRankHeader(std::string value) {
    net::HttpRequest request;
    request.method = "POST";
    request.path = "/v1/completions";
    request.headers.emplace_back("x-data-parallel-rank", std::move(value));
    return request;
  }

  void Run(net::Task<void> body) {
    std::exception_ptr failure;
    boost::asio::co_spawn(io_, std::move(body), [&](std::exception_ptr e) { failure = e; });
    io_.run();
    if (failure) std::rethrow_exception(failure);
  }

  boost::asio::io_context io_;
  request::BuiltinTokenizer tokenizer_;
  engine::TokenGenerator generator_{tokenizer_};
  Replica rank0_{io_.get_executor(), Options(0), generator_, nullptr};
  Replica rank1_{io_.get_executor(), Options(1), generator_, nullptr};
  DataParallelRanks ranks_{{&rank0_, &rank1_}};
};

TEST_F(DataParallelRanksTest, TheHeaderPinsTheRankAndAnOutOfRangeOneIsAnError) {
  EXPECT_EQ(ranks_.Pick(WithRankHeader("1")).value(), &rank1_);
  EXPECT_EQ(ranks_.Pick(WithRankHeader("0")).value(), &rank0_);
  absl::StatusOr<Replica*> out_of_range = ranks_.Pick(WithRankHeader("2"));
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_EQ(out_of_range.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out_of_range.status().message(), "data_parallel_rank 2 is out of range [0, 2).");
}

TEST_F(DataParallelRanksTest, WithoutAHeaderTheLeastLoadedRankServes) {
  const net::HttpRequest plain;
  EXPECT_EQ(ranks_.Pick(plain).value(), &rank0_);  // both idle: the lowest rank
  // A request queued on rank 0 (waiting: score 4) sends the next one to rank 1.
  absl::StatusOr<RequestHandle> queued = rank0_.Submit(Request(rank0_, 4));
  ASSERT_TRUE(queued.ok()) << queued.status();
  EXPECT_EQ(ranks_.Pick(plain).value(), &rank1_);
}

TEST_F(DataParallelRanksTest, OneRankIgnoresTheHeader) {
  DataParallelRanks one({&rank0_});
  EXPECT_EQ(one.Pick(WithRankHeader("5")).value(), &rank0_);
}

TEST_F(DataParallelRanksTest, ResetTriesEveryRankAndNamesTheOneThatFailed) {
  rank0_.Start();
  rank1_.Start();
  absl::Status reset_while_rank1_runs;
  int64_t rank0_cached_after = -1;
  absl::Status reset_when_idle;
  Run([&]() -> net::Task<void> {
    absl::StatusOr<RequestHandle> done = rank0_.Submit(Request(rank0_, 2));
    if (!done.ok()) co_return;
    EXPECT_GT(co_await Drain(*done), 0);  // rank 0 now caches the prompt's 3 full blocks
    EXPECT_EQ(rank0_.Stats().cached_blocks, 3);
    absl::StatusOr<RequestHandle> running = rank1_.Submit(Request(rank1_, 1000));
    if (!running.ok()) co_return;
    EXPECT_FALSE((co_await running->NextEvents()).empty());
    reset_while_rank1_runs = ranks_.ResetPrefixCache();
    rank0_cached_after = rank0_.Stats().cached_blocks;
    running = absl::CancelledError();  // drops the handle: aborts the request
    reset_when_idle = ranks_.ResetPrefixCache();
    rank0_.Stop();
    rank1_.Stop();
  }());
  EXPECT_EQ(reset_while_rank1_runs.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(reset_while_rank1_runs.message(), HasSubstr("data-parallel rank 1: "));
  EXPECT_EQ(rank0_cached_after, 0);  // rank 0 was reset although rank 1 refused
  EXPECT_TRUE(reset_when_idle.ok()) << reset_when_idle;
  EXPECT_EQ(rank1_.Stats().cached_blocks, 0);
}

TEST_F(DataParallelRanksTest, MetricsServeEveryRanksSeriesUnderOneHeader) {
  absl::StatusOr<RequestHandle> queued = rank1_.Submit(Request(rank1_, 4));
  ASSERT_TRUE(queued.ok()) << queued.status();
  const std::string text = ranks_.MetricsText();
  EXPECT_THAT(text, HasSubstr("vllm:num_requests_waiting{engine=\"0\",model_name=\"tiny\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("vllm:num_requests_waiting{engine=\"1\",model_name=\"tiny\"} 1\n"));
  EXPECT_EQ(text.find("# TYPE vllm:num_requests_waiting gauge"),
            text.rfind("# TYPE vllm:num_requests_waiting gauge"));
}

}  // namespace
}  // namespace warmroute::emulator
