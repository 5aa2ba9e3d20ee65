#include <map>
#include <set>
#include <string>

#include "core/request/tokenizer.h"
#include "core/workload/generators.h"
#include "core/workload/test_driver.h"
#include "gtest/gtest.h"

namespace warmroute::workload {
namespace {

int64_t Tokens(std::string_view text) {
  return static_cast<int64_t>(request::BuiltinTokenizer().Encode(text).size());
}

WorkloadOptions Options(int64_t n) {
  WorkloadOptions options;
  options.name = "multi-turn";
  options.num_requests = n;
  options.rate_per_s = 1;
  return options;
}

TEST(MultiTurnTest, OnlyFirstTurnsAreAvailableBeforeAnyResponse) {
  auto workload = MakeMultiTurn(Options(15), MultiTurnConfig{}, 1);  // 3 sessions of 5
  std::vector<WorkloadRequest> firsts;
  while (auto r = workload->Next()) firsts.push_back(*r);
  ASSERT_EQ(firsts.size(), 3u);
  for (size_t i = 0; i < firsts.size(); ++i) {
    EXPECT_EQ(firsts[i].turn, 0);
    EXPECT_EQ(firsts[i].session, i + 1);
    ASSERT_EQ(firsts[i].messages.size(), 2u);
    EXPECT_EQ(firsts[i].messages[0].role, "system");
    EXPECT_EQ(firsts[i].messages[1].role, "user");
    EXPECT_EQ(firsts[i].max_tokens, 200);
    if (i > 0) {
      EXPECT_GT(firsts[i].arrival, firsts[i - 1].arrival);
    }
  }
  EXPECT_FALSE(workload->Done());  // waiting for responses
}

TEST(MultiTurnTest, ResponseReleasesTheNextTurnWithTheRealAnswerAfterThinkTime) {
  auto workload = MakeMultiTurn(Options(5), MultiTurnConfig{}, 2);
  const WorkloadRequest first = *workload->Next();
  EXPECT_FALSE(workload->Next().has_value());
  const Duration now = first.arrival + std::chrono::seconds(3);
  workload->OnResponse(first.id, " The answer, verbatim.", now);
  const auto second = workload->Next();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->session, first.session);
  EXPECT_EQ(second->turn, 1);
  EXPECT_NE(second->id, first.id);
  EXPECT_GT(second->arrival, now);  // now + an exponential think time
  ASSERT_EQ(second->messages.size(), 4u);
  EXPECT_EQ(second->messages[0].content, first.messages[0].content);
  EXPECT_EQ(second->messages[1].content, first.messages[1].content);
  EXPECT_EQ(second->messages[2].role, "assistant");
  EXPECT_EQ(second->messages[2].content, " The answer, verbatim.");
  EXPECT_EQ(second->messages[3].role, "user");
  // An unknown or repeated id releases nothing.
  workload->OnResponse(first.id, "again", now);
  workload->OnResponse(12345, "unknown", now);
  EXPECT_FALSE(workload->Next().has_value());
}

TEST(MultiTurnTest, ThinkTimesAverageFiveSeconds) {
  auto workload = MakeMultiTurn(Options(10000), MultiTurnConfig{}, 3);
  double think_sum = 0;
  int releases = 0;
  std::map<uint64_t, Duration> answered_at;  // session -> last response time
  const Drained drained = [&] {
    Drained out;
    std::deque<WorkloadRequest> outstanding;
    while (true) {
      while (auto r = workload->Next()) {
        if (r->turn > 0) {
          think_sum += ToSeconds(r->arrival - answered_at.at(r->session));
          ++releases;
        }
        out.requests.push_back(*r);
        outstanding.push_back(*r);
      }
      if (outstanding.empty()) break;
      const WorkloadRequest done = outstanding.front();
      outstanding.pop_front();
      const Duration now = done.arrival + std::chrono::milliseconds(500);
      answered_at[done.session] = now;
      workload->OnResponse(done.id, "ok", now);
    }
    return out;
  }();
  EXPECT_EQ(drained.requests.size(), 10000u);
  EXPECT_EQ(releases, 8000);
  EXPECT_NEAR(think_sum / releases, 5.0, 5.0 * 0.05);
  EXPECT_TRUE(workload->Done());
}

TEST(MultiTurnTest, HistoryGrowsAndNumRequestsCountsEveryTurn) {
  auto workload = MakeMultiTurn(Options(7), MultiTurnConfig{}, 4);  // sessions of 5 and 2 turns
  const Drained drained = Drain(*workload);
  ASSERT_EQ(drained.requests.size(), 7u);
  std::map<uint64_t, std::vector<WorkloadRequest>> sessions;
  for (const WorkloadRequest& r : drained.requests) sessions[r.session].push_back(r);
  ASSERT_EQ(sessions.size(), 2u);
  EXPECT_EQ(sessions[1].size(), 5u);
  EXPECT_EQ(sessions[2].size(), 2u);
  for (const auto& [session, turns] : sessions) {
    for (size_t k = 0; k < turns.size(); ++k) {
      const WorkloadRequest& r = turns[k];
      EXPECT_EQ(r.turn, static_cast<int>(k));
      ASSERT_EQ(r.messages.size(), 2 + 2 * k);
      const int64_t user_tokens = Tokens(r.messages.back().content);
      EXPECT_GE(user_tokens, 100);
      EXPECT_LE(user_tokens, 300);
      if (k > 0) {
        // The previous turn's messages are a prefix, then its real answer.
        const WorkloadRequest& prev = turns[k - 1];
        for (size_t m = 0; m < prev.messages.size(); ++m) {
          EXPECT_EQ(r.messages[m].content, prev.messages[m].content);
        }
        EXPECT_EQ(r.messages[prev.messages.size()].content, drained.answers[prev.id]);
      }
    }
  }
  EXPECT_NEAR(Tokens(drained.requests[0].messages[0].content), 1000, 150);
  EXPECT_TRUE(workload->Done());
}

TEST(MultiTurnTest, NotDoneWhileAResponseIsOutstanding) {
  auto workload = MakeMultiTurn(Options(2), MultiTurnConfig{}, 5);
  const WorkloadRequest first = *workload->Next();
  EXPECT_FALSE(workload->Done());
  workload->OnResponse(first.id, "a", first.arrival);
  EXPECT_FALSE(workload->Done());  // turn 1 released, not yet taken
  const WorkloadRequest second = *workload->Next();
  EXPECT_FALSE(workload->Done());  // turn 1 awaits its response
  workload->OnResponse(second.id, "b", second.arrival);
  EXPECT_TRUE(workload->Done());
  EXPECT_FALSE(workload->Next().has_value());
}

}  // namespace
}  // namespace warmroute::workload
