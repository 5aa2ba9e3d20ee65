#include "emulator/dp_rank_picker.h"

#include <gtest/gtest.h>

#include <vector>

#include "common/status.h"

namespace warmroute::emulator {
namespace {

TEST(PickDataParallelRankTest, OneRankIsAlwaysRankZero) {
  const std::vector<RankLoad> loads = {{.waiting = 7, .running = 3}};
  EXPECT_EQ(PickDataParallelRank(loads, "").value(), 0);
}

TEST(PickDataParallelRankTest, PicksTheLeastWaitingTimesFourPlusRunning) {
  // Scores 4*1 + 0 = 4, 0*4 + 3 = 3: the rank with more running but nothing waiting wins.
  const std::vector<RankLoad> loads = {{.waiting = 1, .running = 0}, {.waiting = 0, .running = 3}};
  EXPECT_EQ(PickDataParallelRank(loads, "").value(), 1);
  // Scores 4 and 5: rank 0.
  const std::vector<RankLoad> busier = {{.waiting = 1, .running = 0}, {.waiting = 0, .running = 5}};
  EXPECT_EQ(PickDataParallelRank(busier, "").value(), 0);
}

TEST(PickDataParallelRankTest, TiesGoToTheLowestRank) {
  const std::vector<RankLoad> idle(4);
  EXPECT_EQ(PickDataParallelRank(idle, "").value(), 0);
  const std::vector<RankLoad> loads = {
      {.waiting = 0, .running = 5}, {.waiting = 1, .running = 0}, {.waiting = 0, .running = 4}};
  EXPECT_EQ(PickDataParallelRank(loads, "").value(), 1);
}

TEST(PickDataParallelRankTest, TheHeaderPinsTheRankWhateverTheLoad) {
  const std::vector<RankLoad> loads = {{.waiting = 0, .running = 0}, {.waiting = 9, .running = 9}};
  EXPECT_EQ(PickDataParallelRank(loads, "1").value(), 1);
  EXPECT_EQ(PickDataParallelRank(loads, " 1 ").value(), 1);  // Python's int() strips spaces
  EXPECT_EQ(PickDataParallelRank(loads, "+1").value(), 1);
  EXPECT_EQ(PickDataParallelRank(loads, "0").value(), 0);
}

TEST(PickDataParallelRankTest, AnIntegerHeaderOutOfRangeIsAnError) {
  const std::vector<RankLoad> loads(2);
  for (const char* header : {"2", "-1", "99999999999999999999999"}) {
    absl::StatusOr<int> rank = PickDataParallelRank(loads, header);
    ASSERT_FALSE(rank.ok()) << header;
    EXPECT_EQ(rank.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(ParamOf(rank.status()), "data_parallel_rank");
  }
  EXPECT_EQ(PickDataParallelRank(loads, "2").status().message(),
            "data_parallel_rank 2 is out of range [0, 2).");
}

TEST(PickDataParallelRankTest, AHeaderThatIsNotAnIntegerIsIgnored) {
  // vLLM's _get_data_parallel_rank returns None when int() fails: the balancer decides.
  const std::vector<RankLoad> loads = {{.waiting = 2, .running = 0}, {.waiting = 0, .running = 0}};
  for (const char* header : {"one", "1.5", "1x", " ", "+"}) {
    EXPECT_EQ(PickDataParallelRank(loads, header).value(), 1) << header;
  }
}

}  // namespace
}  // namespace warmroute::emulator
