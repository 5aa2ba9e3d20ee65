#include "core/kv_events/backend_event_feed.h"

#include <string>
#include <vector>

#include "common/clock.h"
#include "core/kv_events/event_encoder.h"
#include "core/kv_events/msgpack_test_util.h"
#include "core/routing/policy_registry.h"
#include "core/routing/router.h"
#include "gtest/gtest.h"

namespace warmroute::kv_events {
namespace {

using routing::BackendId;
using routing::KvEventState;
using testing::Cleared;
using testing::Removed;
using testing::Stored;

constexpr int kBlock = 16;

std::string Batch(const std::vector<engine::KvEvent>& events, std::optional<int> rank = 0,
                  double ts = 1000.0) {
  return EncodeKvEventBatch(ts, events, rank, KvEventEncoding::kArray);
}

class FeedTest : public ::testing::Test {
 protected:
  FeedTest() {
    b0_ = router_.AddBackend({.name = "r0"});
    router_.AddBackend({.name = "r1"});
    for (size_t i = 0; i < tokens_.size(); ++i) tokens_[i] = static_cast<int32_t>(1000 + i);
    // A token-keyed dispatch of the prompt to r0, so the writer can attribute its first block.
    routing::RoutingRequest r;
    r.id = 1;
    r.model = "m";
    r.key = Key();
    r.prompt_tokens = static_cast<int64_t>(tokens_.size());
    EXPECT_EQ(router_.Route(r)->backend, b0_);
    router_.SetDispatchDomain(1, routing::DomainOfTokenPrompt("m", "", "", tokens_, kBlock));
    router_.CommitInsert(1);
    router_.OnFinished(1, 0);
    router_.ClearIndex(b0_);  // forget the speculative insert: what follows is the events'
  }

  routing::PrefixKey Key() const {
    return routing::MakePrefixKeyFromTokens("m", routing::PrefixKeySalt("", ""), tokens_,
                                            {.block_tokens = kBlock});
  }
  int Matched() const { return router_.index().Match(Key().block_hashes)[b0_]; }
  // The prompt's 4 blocks as two runs, engine hashes 501..504.
  std::string StorePrompt(std::optional<int> rank = 0) const {
    return Batch({Stored({501, 502}, std::nullopt,
                         std::vector<int32_t>(tokens_.begin(), tokens_.begin() + 32), kBlock),
                  Stored({503, 504}, 502, std::vector<int32_t>(tokens_.begin() + 32, tokens_.end()),
                         kBlock)},
                 rank);
  }
  void Live(BackendEventFeed& feed, uint64_t seq, const std::string& payload, int rank = 0) {
    feed.OnLive(seq, payload, clock_.Now(), rank);
    feed.ApplyTo(router_);
  }

  ManualClock clock_;
  routing::Router router_{
      routing::MakePolicy("round_robin", {}).value(), {.tokens_per_block = kBlock}, clock_, 1};
  BackendId b0_ = 0;
  std::vector<int32_t> tokens_ = std::vector<int32_t>(64);
};

TEST_F(FeedTest, AppliesLiveMessagesInOrderAndReportsPrecise) {
  BackendEventFeed feed(b0_, {.block_size = kBlock});
  feed.ApplyTo(router_);
  EXPECT_EQ(router_.fleet().backend(b0_).kv_events, KvEventState::kUncertain);  // starting

  Live(feed, 0, StorePrompt());
  EXPECT_EQ(feed.state(), StreamState::kPrecise);
  EXPECT_EQ(router_.fleet().backend(b0_).kv_events, KvEventState::kPrecise);
  EXPECT_EQ(Matched(), 4);
  ASSERT_EQ(feed.applied_batch_ts().size(), 1u);
  EXPECT_EQ(feed.applied_batch_ts()[0], 1000.0);

  Live(feed, 1, Batch({Removed({503})}));
  EXPECT_EQ(Matched(), 2);
  Live(feed, 1, Batch({Removed({502})}));  // the same number again: a duplicate, ignored
  EXPECT_EQ(Matched(), 2);
  EXPECT_EQ(feed.counters().applied, 2);
  EXPECT_EQ(feed.counters().duplicates, 1);
  EXPECT_EQ(feed.blocks(), 3u);
}

TEST_F(FeedTest, PayloadsNeedNotOutliveTheFeedCall) {
  BackendEventFeed feed(b0_, {.block_size = kBlock});
  {
    std::string payload = StorePrompt();
    feed.OnLive(0, payload, clock_.Now());
    payload.assign(payload.size(), '\0');  // the caller reuses its buffer before ApplyTo
  }
  feed.ApplyTo(router_);
  EXPECT_EQ(Matched(), 4);
}

TEST_F(FeedTest, GapIsRepairedByReplayAndStaysPrecise) {
  BackendEventFeed feed(b0_, {.block_size = kBlock, .stream = {.replay_configured = true}});
  Live(feed, 0, Batch({}));
  const std::string lost = StorePrompt();
  Live(feed, 2, Batch({Removed({504})}));  // message 1 was dropped
  EXPECT_EQ(router_.fleet().backend(b0_).kv_events, KvEventState::kUncertain);
  std::vector<ReplayRequest> requests = feed.TakeReplayRequests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].from_seq, 1u);
  EXPECT_EQ(EncodeReplayRequest(1), std::string("\0\0\0\0\0\0\0\1", 8));
  EXPECT_TRUE(feed.TakeReplayRequests().empty());

  // The replay endpoint answers through a DEALER: an empty delimiter, then (seq, payload).
  const std::string seq1 = EncodeReplayRequest(1), seq2 = EncodeReplayRequest(2);
  const std::string end = EncodeReplayRequest(kEndOfReplay);
  const std::string removed = Batch({Removed({504})});
  std::vector<std::string_view> reply = {"", seq1, lost};
  feed.OnReplayFrames(reply, clock_.Now());
  reply = {"", seq2, removed};
  feed.OnReplayFrames(reply, clock_.Now());  // already applied from the buffer: a duplicate
  reply = {"", end, ""};
  feed.OnReplayFrames(reply, clock_.Now());
  feed.ApplyTo(router_);
  EXPECT_EQ(feed.state(), StreamState::kPrecise);
  EXPECT_EQ(router_.fleet().backend(b0_).kv_events, KvEventState::kPrecise);
  EXPECT_EQ(Matched(), 3);
  EXPECT_EQ(feed.counters().replays_requested, 1);
  EXPECT_EQ(feed.counters().replayed, 1);
  EXPECT_EQ(feed.counters().applied, 3);
  EXPECT_EQ(feed.counters().missed, 0);
  EXPECT_EQ(feed.counters().rebuilds, 0);
}

TEST_F(FeedTest, ReplayEndingShortRebuildsAndCountsTheMissedMessages) {
  BackendEventFeed feed(b0_, {.block_size = kBlock, .stream = {.replay_configured = true}});
  Live(feed, 0, StorePrompt());
  Live(feed, 3, Batch({}));
  const std::string end = EncodeReplayRequest(kEndOfReplay);
  std::vector<std::string_view> reply = {end, ""};
  feed.OnReplayFrames(reply, clock_.Now());
  feed.ApplyTo(router_);
  EXPECT_EQ(feed.state(), StreamState::kRebuilding);
  EXPECT_EQ(Matched(), 0);  // cleared: what the lost messages did is unknown
  EXPECT_EQ(feed.counters().missed, 2);
  EXPECT_EQ(feed.counters().rebuilds, 1);
}

TEST_F(FeedTest, MalformedInputIsCountedDroppedAndRebuilds) {
  BackendEventFeed feed(b0_, {.block_size = kBlock});
  Live(feed, 0, StorePrompt());
  ASSERT_EQ(Matched(), 4);

  const std::string seq1 = EncodeReplayRequest(1);
  std::vector<std::string_view> two_frames = {"", seq1};
  feed.OnLiveFrames(two_frames, clock_.Now());
  std::vector<std::string_view> short_seq = {"", "\1\2\3", "x"};
  feed.OnLiveFrames(short_seq, clock_.Now());
  feed.ApplyTo(router_);
  EXPECT_EQ(feed.counters().malformed, 2);
  EXPECT_EQ(feed.error_transitions(), 1);  // two in a row: one transition to log
  EXPECT_NE(feed.last_error().find("sequence"), std::string::npos) << feed.last_error();
  EXPECT_EQ(feed.state(), StreamState::kRebuilding);
  EXPECT_EQ(router_.fleet().backend(b0_).kv_events, KvEventState::kUncertain);
  EXPECT_EQ(Matched(), 0);

  Live(feed, 1, StorePrompt());  // a good message ends the run of errors
  EXPECT_EQ(Matched(), 4);
  const std::string garbage = "\xc1\xc1\xc1";
  std::vector<std::string_view> frames = {"", seq1, garbage};
  const std::string seq2 = EncodeReplayRequest(2);
  frames[1] = seq2;
  feed.OnLiveFrames(frames, clock_.Now());
  feed.ApplyTo(router_);
  EXPECT_EQ(feed.counters().malformed, 3);
  EXPECT_EQ(feed.error_transitions(), 2);
  EXPECT_EQ(Matched(), 0);

  // An engine with another block size: named in the error, nothing of the batch applied.
  Live(feed, 3, Batch({Stored({601}, std::nullopt, std::vector<int32_t>(32, 7), 32)}));
  EXPECT_EQ(feed.counters().malformed, 4);
  EXPECT_NE(feed.last_error().find("block size 32"), std::string::npos) << feed.last_error();
  EXPECT_EQ(feed.blocks(), 0u);
}

TEST_F(FeedTest, EngineRestartClearsTheSliceAndIsPreciseFromSequenceZero) {
  BackendEventFeed feed(b0_, {.block_size = kBlock});
  Live(feed, 0, StorePrompt());
  Live(feed, 1, Batch({}));
  Live(feed, 0, Batch({}));  // a new process numbers from 0 again; its cache is empty
  EXPECT_EQ(feed.counters().restarts, 1);
  EXPECT_EQ(feed.state(), StreamState::kPrecise);
  EXPECT_EQ(router_.fleet().backend(b0_).kv_events, KvEventState::kPrecise);
  EXPECT_EQ(Matched(), 0);
  EXPECT_EQ(feed.blocks(), 0u);
}

TEST_F(FeedTest, HealthFlapClearsAndRebuildsUntilTheRebuildPeriod) {
  BackendEventFeed feed(
      b0_, {.block_size = kBlock, .stream = {.rebuild_period = std::chrono::seconds(5)}});
  Live(feed, 0, StorePrompt());
  feed.Clear(clock_.Now());
  feed.ApplyTo(router_);
  EXPECT_EQ(Matched(), 0);
  EXPECT_EQ(feed.counters().clears, 1);
  EXPECT_EQ(router_.fleet().backend(b0_).kv_events, KvEventState::kUncertain);
  clock_.Advance(std::chrono::seconds(5));
  feed.Tick(clock_.Now());
  feed.ApplyTo(router_);
  EXPECT_EQ(router_.fleet().backend(b0_).kv_events, KvEventState::kPrecise);
}

TEST_F(FeedTest, HealthFlapWithReplayIsPreciseOnceTheHistoryIsReplayed) {
  BackendEventFeed feed(b0_, {.block_size = kBlock, .stream = {.replay_configured = true}});
  const std::string stored = StorePrompt();
  Live(feed, 0, stored);
  feed.Clear(clock_.Now());
  feed.ApplyTo(router_);
  EXPECT_EQ(Matched(), 0);
  EXPECT_EQ(router_.fleet().backend(b0_).kv_events, KvEventState::kUncertain);
  std::vector<ReplayRequest> requests = feed.TakeReplayRequests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].from_seq, 0u);
  feed.OnReplayed(0, stored, clock_.Now());
  feed.OnReplayed(kEndOfReplay, "", clock_.Now());
  feed.ApplyTo(router_);
  EXPECT_EQ(Matched(), 4);  // the engine's blocks, back from its history
  EXPECT_EQ(feed.state(), StreamState::kPrecise);
  EXPECT_EQ(router_.fleet().backend(b0_).kv_events, KvEventState::kPrecise);
}

TEST_F(FeedTest, AllBlocksClearedEmptiesTheSliceAndCompletesARebuild) {
  BackendEventFeed feed(b0_, {.block_size = kBlock});
  Live(feed, 5, StorePrompt());  // subscribed late: the engine held blocks before
  EXPECT_EQ(feed.state(), StreamState::kRebuilding);
  EXPECT_EQ(Matched(), 4);
  Live(feed, 6, Batch({Cleared()}));
  EXPECT_EQ(feed.counters().clears, 1);
  EXPECT_EQ(feed.state(), StreamState::kPrecise);
  EXPECT_EQ(Matched(), 0);
}

TEST_F(FeedTest, DataParallelRanksShareTheSliceAndMustNameTheirRank) {
  BackendEventFeed feed(b0_, {.block_size = kBlock, .dp_ranks = 2});
  Live(feed, 0, Batch({}, 0), 0);
  feed.ApplyTo(router_);
  EXPECT_EQ(router_.fleet().backend(b0_).kv_events, KvEventState::kUncertain);  // rank 1 silent
  Live(feed, 0, StorePrompt(1), 1);
  EXPECT_EQ(router_.fleet().backend(b0_).kv_events, KvEventState::kPrecise);
  EXPECT_EQ(Matched(), 4);
  EXPECT_EQ(feed.rank_applied(0), 1);
  EXPECT_EQ(feed.rank_applied(1), 1);
  EXPECT_EQ(feed.counters().applied, 2);

  // Rank 0's batch on rank 1's endpoint: malformed; rank 1 rebuilds, and so does rank 0, whose
  // blocks left with the shared slice.
  Live(feed, 1, Batch({}, 0), 1);
  EXPECT_EQ(feed.counters().malformed, 1);
  EXPECT_NE(feed.last_error().find("rank 1"), std::string::npos) << feed.last_error();
  EXPECT_EQ(feed.rank_state(0), StreamState::kRebuilding);
  EXPECT_EQ(feed.rank_state(1), StreamState::kRebuilding);
  EXPECT_EQ(Matched(), 0);
}

TEST_F(FeedTest, EachRanksResetReplaysTheOtherRankOnlySinceItsOwnReset) {
  // Two ranks reset together (/reset_prefix_cache on a data-parallel engine): each rank's
  // AllBlocksCleared clears the shared slice and replays the other rank. Replaying a rank from
  // seq 0 would bring back its own AllBlocksCleared, which would clear the other rank again, for
  // ever; from its latest AllBlocksCleared on, the ranks settle.
  BackendEventFeed feed(
      b0_, {.block_size = kBlock, .dp_ranks = 2, .stream = {.replay_configured = true}});
  const std::string cleared0 = Batch({Cleared()}, 0), cleared1 = Batch({Cleared()}, 1);
  const std::string empty1 = Batch({}, 1);
  const std::string end = EncodeReplayRequest(kEndOfReplay);
  Live(feed, 0, StorePrompt(0), 0);
  Live(feed, 0, empty1, 1);
  EXPECT_EQ(feed.state(), StreamState::kPrecise);

  Live(feed, 1, cleared0, 0);  // rank 0's reset: rank 1 replays its whole history
  std::vector<ReplayRequest> requests = feed.TakeReplayRequests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].rank, 1);
  EXPECT_EQ(requests[0].from_seq, 0u);
  Live(feed, 1, cleared1, 1);  // rank 1's reset arrives while it awaits its replay: buffered
  const std::string seq0 = EncodeReplayRequest(0);
  std::vector<std::string_view> reply = {"", seq0, empty1};
  feed.OnReplayFrames(reply, clock_.Now(), 1);  // the buffered reset follows, and is applied
  reply = {"", end, ""};
  feed.OnReplayFrames(reply, clock_.Now(), 1);
  feed.ApplyTo(router_);
  // Rank 1's reset cleared the slice again: rank 0 replays, but only what followed its own reset.
  requests = feed.TakeReplayRequests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].rank, 0);
  EXPECT_EQ(requests[0].from_seq, 2u);
  reply = {"", end, ""};
  feed.OnReplayFrames(reply, clock_.Now(), 0);  // rank 0 stored nothing since its reset
  feed.ApplyTo(router_);
  EXPECT_TRUE(feed.TakeReplayRequests().empty());
  EXPECT_EQ(feed.rank_state(0), StreamState::kPrecise);
  EXPECT_EQ(feed.rank_state(1), StreamState::kPrecise);
  EXPECT_EQ(Matched(), 0);

  // Both ranks go on from there.
  Live(feed, 2, StorePrompt(1), 1);
  EXPECT_EQ(Matched(), 4);
  EXPECT_EQ(feed.state(), StreamState::kPrecise);
}

TEST_F(FeedTest, ARanksRestartReplaysTheOtherRanksFromSequenceZero) {
  // After both ranks' resets, the engine restarts (all its ranks number from 0 again) and rank 0
  // is seen restarting first: rank 1's history is asked from seq 0, not from after its reset in
  // the old process (which the new process never reached).
  BackendEventFeed feed(
      b0_, {.block_size = kBlock, .dp_ranks = 2, .stream = {.replay_configured = true}});
  const std::string end = EncodeReplayRequest(kEndOfReplay);
  const std::string stored = StorePrompt(0), empty0 = Batch({}, 0);
  Live(feed, 0, stored, 0);
  Live(feed, 1, empty0, 0);
  Live(feed, 0, Batch({}, 1), 1);
  Live(feed, 1, Batch({}, 1), 1);
  Live(feed, 2, Batch({Cleared()}, 1), 1);  // rank 1's reset: rank 0 replays from 0
  const std::string seq0 = EncodeReplayRequest(0), seq1 = EncodeReplayRequest(1);
  std::vector<std::string_view> reply = {"", seq0, stored};
  feed.OnReplayFrames(reply, clock_.Now(), 0);
  reply = {"", seq1, empty0};
  feed.OnReplayFrames(reply, clock_.Now(), 0);
  reply = {"", end, ""};
  feed.OnReplayFrames(reply, clock_.Now(), 0);
  feed.ApplyTo(router_);
  feed.TakeReplayRequests();
  ASSERT_EQ(feed.rank_state(1), StreamState::kPrecise);

  Live(feed, 0, StorePrompt(0), 0);  // rank 0 numbers from 0 again: the engine restarted
  const std::vector<ReplayRequest> requests = feed.TakeReplayRequests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].rank, 1);
  EXPECT_EQ(requests[0].from_seq, 0u);
}

// Rank slices: a data-parallel backend whose ranks the router addresses as targets of their own.
class RankSlicesTest : public FeedTest {
 protected:
  RankSlicesTest() {
    // The prompt dispatched to the second target (rank 1's) too, so that its first block is
    // attributed there.
    routing::RoutingRequest r;
    r.id = 2;
    r.model = "m";
    r.key = Key();
    r.prompt_tokens = static_cast<int64_t>(tokens_.size());
    r.placement = routing::Placement::kPinned;
    r.pinned = b1_;
    EXPECT_EQ(router_.Route(r)->backend, b1_);
    router_.SetDispatchDomain(2, routing::DomainOfTokenPrompt("m", "", "", tokens_, kBlock));
    router_.CommitInsert(2);
    router_.OnFinished(2, 0);
    router_.ClearIndex(b1_);
  }
  int MatchedOn(BackendId b) const { return router_.index().Match(Key().block_hashes)[b]; }
  KvEventState StateOf(BackendId b) const { return router_.fleet().backend(b).kv_events; }

  BackendId b1_ = 1;
  BackendEventFeed feed_{0,
                         {.block_size = kBlock,
                          .dp_ranks = 2,
                          .stream = {.replay_configured = true},
                          .rank_slices = {0, 1}}};
};

TEST_F(RankSlicesTest, EachRanksEventsFeedItsOwnSliceAndState) {
  Live(feed_, 0, StorePrompt(0), 0);
  EXPECT_EQ(MatchedOn(b0_), 4);
  EXPECT_EQ(MatchedOn(b1_), 0);  // rank 1 stored nothing: its target predicts nothing
  EXPECT_EQ(StateOf(b0_), KvEventState::kPrecise);
  EXPECT_EQ(StateOf(b1_), KvEventState::kUncertain);  // rank 1 silent yet
  EXPECT_EQ(feed_.slice_of(1), b1_);

  Live(feed_, 0, StorePrompt(1), 1);
  EXPECT_EQ(MatchedOn(b1_), 4);
  EXPECT_EQ(StateOf(b1_), KvEventState::kPrecise);
  EXPECT_EQ(feed_.blocks(), 8u);  // both slices' engine blocks
  EXPECT_EQ(feed_.state(), StreamState::kPrecise);
}

TEST_F(RankSlicesTest, ARanksResetOrRestartClearsOnlyItsSliceAndReplaysNoOtherRank) {
  Live(feed_, 0, StorePrompt(0), 0);
  Live(feed_, 0, StorePrompt(1), 1);
  Live(feed_, 1, Batch({Cleared()}, 1), 1);  // rank 1's reset
  EXPECT_EQ(MatchedOn(b1_), 0);
  EXPECT_EQ(MatchedOn(b0_), 4);  // rank 0's cache holds its blocks still
  EXPECT_TRUE(feed_.TakeReplayRequests().empty());
  EXPECT_EQ(feed_.rank_state(0), StreamState::kPrecise);
  EXPECT_EQ(feed_.counters().clears, 1);

  Live(feed_, 1, Batch({}, 0), 0);
  Live(feed_, 0, Batch({}, 0), 0);  // rank 0's numbering starts over: its restart
  EXPECT_EQ(MatchedOn(b0_), 0);
  EXPECT_EQ(feed_.rank_state(1), StreamState::kPrecise);
  for (const ReplayRequest& r : feed_.TakeReplayRequests()) EXPECT_EQ(r.rank, 0);

  // A malformed message on rank 1 rebuilds rank 1 alone.
  Live(feed_, 1, StorePrompt(0), 0);
  Live(feed_, 2, Batch({}, 0), 1);  // rank 0's batch on rank 1's endpoint
  EXPECT_EQ(feed_.counters().malformed, 1);
  EXPECT_EQ(MatchedOn(b0_), 4);
  EXPECT_EQ(StateOf(b0_), KvEventState::kPrecise);
  EXPECT_EQ(StateOf(b1_), KvEventState::kUncertain);
}

TEST_F(RankSlicesTest, AHealthFlapClearsEveryRanksSlice) {
  Live(feed_, 0, StorePrompt(0), 0);
  Live(feed_, 0, StorePrompt(1), 1);
  feed_.Clear(clock_.Now());
  feed_.ApplyTo(router_);
  EXPECT_EQ(MatchedOn(b0_), 0);
  EXPECT_EQ(MatchedOn(b1_), 0);
  EXPECT_EQ(StateOf(b0_), KvEventState::kUncertain);
  EXPECT_EQ(StateOf(b1_), KvEventState::kUncertain);
  EXPECT_EQ(feed_.TakeReplayRequests().size(), 2u);  // each rank's history from seq 0
}

}  // namespace
}  // namespace warmroute::kv_events
