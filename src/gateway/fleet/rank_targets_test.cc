#include "gateway/fleet/rank_targets.h"

#include <gtest/gtest.h>

namespace warmroute::gateway {
namespace {

TEST(RankTargetsTest, NamesAreTheBackendsWithTheRank) {
  EXPECT_EQ(RankTargetName("e0", 0), "e0/rank0");
  EXPECT_EQ(RankTargetName("gpu-node-3", 12), "gpu-node-3/rank12");
}

TEST(RankTargetsTest, SharesSplitEvenlyTheRemainderToTheFirstRanks) {
  EXPECT_EQ(RankShare(10, 4, 0), 3);
  EXPECT_EQ(RankShare(10, 4, 1), 3);
  EXPECT_EQ(RankShare(10, 4, 2), 2);
  EXPECT_EQ(RankShare(10, 4, 3), 2);
  EXPECT_EQ(RankShare(0, 2, 1), 0);  // unknown stays unknown
}

ScrapedEngineMetrics Scrape(int cores) {
  ScrapedEngineMetrics m;
  m.sample = {.num_running = 5, .num_waiting = 3, .kv_usage = 0.5, .scraped_at = {}};
  m.kv_capacity_tokens = 1000;
  for (int c = 0; c < cores; ++c) {
    m.cores.push_back(
        {.engine = std::to_string(c),
         .sample = {.num_running = c, .num_waiting = 10 + c, .kv_usage = 0.1 * c, .scraped_at = {}},
         .kv_capacity_tokens = 100 * (c + 1)});
  }
  return m;
}

TEST(RankTargetsTest, ARanksMetricsAreItsEngineCoresWhenTheEngineReportsEachRank) {
  const ScrapedEngineMetrics rank1 = RankMetrics(Scrape(2), 2, 1);
  EXPECT_EQ(rank1.sample.num_running, 1);
  EXPECT_EQ(rank1.sample.num_waiting, 11);
  EXPECT_DOUBLE_EQ(rank1.sample.kv_usage, 0.1);
  EXPECT_EQ(rank1.kv_capacity_tokens, 200);
}

TEST(RankTargetsTest, ARanksMetricsAreAnEvenSplitWhenTheCoresDoNotMatchTheRanks) {
  for (int cores : {0, 3}) {
    const ScrapedEngineMetrics rank0 = RankMetrics(Scrape(cores), 2, 0);
    const ScrapedEngineMetrics rank1 = RankMetrics(Scrape(cores), 2, 1);
    EXPECT_EQ(rank0.sample.num_running + rank1.sample.num_running, 5);
    EXPECT_EQ(rank0.sample.num_running, 3);
    EXPECT_EQ(rank1.sample.num_waiting, 1);
    EXPECT_DOUBLE_EQ(rank1.sample.kv_usage, 0.5);  // a fraction: the backend's
    EXPECT_EQ(rank1.kv_capacity_tokens, 500);
  }
  ScrapedEngineMetrics unknown = Scrape(2);
  unknown.cores[1].kv_capacity_tokens.reset();
  EXPECT_EQ(RankMetrics(unknown, 2, 1).kv_capacity_tokens, 500);  // that core's: the split
}

TEST(RankTargetsTest, ARanksTargetReplacesTheClientsHeaderAndABackendKeepsIt) {
  net::HttpHeaders headers = {{"content-type", "application/json"}, {"x-data-parallel-rank", "0"}};
  const std::optional<std::string> client = DataParallelRankOf(headers);
  ASSERT_EQ(client, "0");
  SetDataParallelRank(headers, 1, client);
  EXPECT_EQ(headers, (net::HttpHeaders{{"content-type", "application/json"},
                                       {"X-data-parallel-rank", "1"}}));
  SetDataParallelRank(headers, -1, client);  // a retry on a backend that is one target
  EXPECT_EQ(headers, (net::HttpHeaders{{"content-type", "application/json"},
                                       {"X-data-parallel-rank", "0"}}));
  SetDataParallelRank(headers, -1, std::nullopt);
  EXPECT_EQ(headers, (net::HttpHeaders{{"content-type", "application/json"}}));
}

}  // namespace
}  // namespace warmroute::gateway
