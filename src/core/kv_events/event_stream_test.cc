#include "core/kv_events/event_stream.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::kv_events {
namespace {

using Kind = StreamAction::Kind;
using std::chrono::seconds;

// An action as a short string: "A3" applies message 3 (its payload must be "m3"), "R5" asks for
// a replay from 5, "C" clears the slice.
std::vector<std::string> Show(const StreamActions& actions) {
  std::vector<std::string> out;
  for (const StreamAction& a : actions) {
    switch (a.kind) {
      case Kind::kApply:
        EXPECT_EQ(a.payload, "m" + std::to_string(a.seq));
        out.push_back("A" + std::to_string(a.seq));
        break;
      case Kind::kRequestReplay:
        out.push_back("R" + std::to_string(a.seq));
        break;
      case Kind::kClearSlice:
        out.push_back("C");
        break;
    }
  }
  return out;
}

class EventStreamTest : public ::testing::Test {
 protected:
  std::vector<std::string> Live(EventStream& s, uint64_t seq) {
    const std::string payload = "m" + std::to_string(seq);
    return Show(s.OnLive(seq, payload, now_));
  }
  std::vector<std::string> Replayed(EventStream& s, uint64_t seq) {
    const std::string payload = "m" + std::to_string(seq);
    return Show(s.OnReplayed(seq, payload, now_));
  }
  TimePoint now_{};
};

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST_F(EventStreamTest, AppliesInOrderAndIsPreciseFromAnEnginesFirstMessage) {
  EventStream s({});
  EXPECT_EQ(s.state(), StreamState::kStarting);
  EXPECT_TRUE(s.uncertain());
  EXPECT_THAT(Live(s, 0), ElementsAre("A0"));
  EXPECT_EQ(s.state(), StreamState::kPrecise);
  EXPECT_THAT(Live(s, 1), ElementsAre("A1"));
  EXPECT_THAT(Live(s, 1), IsEmpty());  // a duplicate
  EXPECT_THAT(Live(s, 2), ElementsAre("A2"));
  EXPECT_EQ(s.counters().applied, 3);
  EXPECT_EQ(s.counters().duplicates, 1);
}

TEST_F(EventStreamTest, JoiningMidStreamRebuildsForTheRebuildPeriod) {
  EventStream s({.rebuild_period = seconds(30)});
  EXPECT_THAT(Live(s, 57), ElementsAre("A57"));
  EXPECT_EQ(s.state(), StreamState::kRebuilding);
  now_ += seconds(29);
  EXPECT_THAT(Show(s.Tick(now_)), IsEmpty());
  EXPECT_EQ(s.state(), StreamState::kRebuilding);
  now_ += seconds(1);
  EXPECT_THAT(Live(s, 58), ElementsAre("A58"));
  EXPECT_EQ(s.state(), StreamState::kPrecise);
}

TEST_F(EventStreamTest, AllBlocksClearedEndsARebuild) {
  EventStream s({});
  Live(s, 5);
  s.MarkComplete();
  EXPECT_EQ(s.state(), StreamState::kPrecise);
}

TEST_F(EventStreamTest, AGapIsFilledByTheReplayAndTheBufferFollows) {
  EventStream s({.replay_configured = true});
  Live(s, 0);
  Live(s, 1);
  EXPECT_THAT(Live(s, 4), ElementsAre("R2"));
  EXPECT_EQ(s.state(), StreamState::kAwaitingReplay);
  EXPECT_TRUE(s.uncertain());
  EXPECT_THAT(Live(s, 5), IsEmpty());
  EXPECT_EQ(s.buffered_messages(), 2u);
  EXPECT_THAT(Replayed(s, 2), ElementsAre("A2"));
  EXPECT_THAT(Replayed(s, 3), ElementsAre("A3", "A4", "A5"));
  EXPECT_EQ(s.state(), StreamState::kPrecise);
  // The rest of the replay repeats what was applied.
  EXPECT_THAT(Replayed(s, 4), IsEmpty());
  EXPECT_THAT(Replayed(s, 5), IsEmpty());
  EXPECT_THAT(Show(s.OnReplayEnd(now_)), IsEmpty());
  EXPECT_THAT(Live(s, 6), ElementsAre("A6"));
  EXPECT_EQ(s.counters().gaps, 1);
  EXPECT_EQ(s.counters().replays_requested, 1);
  EXPECT_EQ(s.counters().replays_completed, 1);
  EXPECT_EQ(s.counters().clears, 0);
}

TEST_F(EventStreamTest, AReplayThatCannotDeliverRebuildsTheSlice) {
  // The replay ends without the missing message.
  EventStream ended({.replay_configured = true});
  Live(ended, 0);
  Live(ended, 3);
  Live(ended, 4);
  EXPECT_THAT(Show(ended.OnReplayEnd(now_)), ElementsAre("C", "A3", "A4"));
  EXPECT_EQ(ended.state(), StreamState::kRebuilding);
  EXPECT_EQ(ended.counters().missed_messages, 2);

  // The publisher's replay buffer starts after the missing messages.
  EventStream skipped({.replay_configured = true});
  Live(skipped, 0);
  Live(skipped, 5);
  EXPECT_THAT(Replayed(skipped, 3), ElementsAre("C", "A3"));
  EXPECT_THAT(Replayed(skipped, 4), ElementsAre("A4", "A5"));
  EXPECT_EQ(skipped.state(), StreamState::kRebuilding);

  // No answer before the timeout.
  EventStream silent({.replay_configured = true, .replay_timeout = seconds(2)});
  Live(silent, 0);
  Live(silent, 2);
  now_ += seconds(1);
  EXPECT_THAT(Show(silent.Tick(now_)), IsEmpty());
  now_ += seconds(1);
  EXPECT_THAT(Show(silent.Tick(now_)), ElementsAre("C", "A2"));
  EXPECT_EQ(silent.counters().replays_failed, 1);
  EXPECT_THAT(Replayed(silent, 1), IsEmpty());  // too late: ignored
}

TEST_F(EventStreamTest, WithoutAReplayEndpointAGapRebuildsAtOnce) {
  EventStream s({.replay_configured = false});
  Live(s, 0);
  EXPECT_THAT(Live(s, 9), ElementsAre("C", "A9"));
  EXPECT_EQ(s.state(), StreamState::kRebuilding);
  EXPECT_EQ(s.counters().missed_messages, 8);
}

TEST_F(EventStreamTest, ABufferOverflowGivesUpTheReplay) {
  EventStream s({.replay_configured = true, .max_buffered_messages = 2});
  Live(s, 0);
  EXPECT_THAT(Live(s, 2), ElementsAre("R1"));
  EXPECT_THAT(Live(s, 3), IsEmpty());
  EXPECT_THAT(Live(s, 4), ElementsAre("C", "A2", "A3", "A4"));
  EXPECT_EQ(s.state(), StreamState::kRebuilding);
}

TEST_F(EventStreamTest, ALowerSequenceIsAnEngineRestart) {
  EventStream s({.replay_configured = true});
  Live(s, 0);
  Live(s, 1);
  Live(s, 2);
  EXPECT_THAT(Live(s, 0), ElementsAre("C", "A0"));
  EXPECT_EQ(s.state(), StreamState::kPrecise);
  EXPECT_EQ(s.counters().resets, 1);
  // A restart while waiting for a replay drops the buffer.
  Live(s, 1);
  Live(s, 5);
  EXPECT_THAT(Live(s, 0), ElementsAre("C", "A0"));
  EXPECT_EQ(s.buffered_messages(), 0u);
}

TEST_F(EventStreamTest, JoiningOrRestartingMidStreamReplaysTheWholeHistoryWhenItCan) {
  EventStream s({.replay_configured = true});
  EXPECT_THAT(Live(s, 3), ElementsAre("R0"));  // message 3 waits for 0..2
  EXPECT_EQ(s.state(), StreamState::kAwaitingReplay);
  EXPECT_THAT(Replayed(s, 0), ElementsAre("A0"));
  EXPECT_THAT(Replayed(s, 1), ElementsAre("A1"));
  EXPECT_THAT(Replayed(s, 2), ElementsAre("A2", "A3"));
  EXPECT_EQ(s.state(), StreamState::kPrecise);
  EXPECT_THAT(Replayed(s, 3), IsEmpty());  // the rest of the replay: already applied
  EXPECT_THAT(Show(s.OnReplayEnd(now_)), IsEmpty());
  EXPECT_THAT(Live(s, 4), ElementsAre("A4"));
  EXPECT_EQ(s.counters().replays_completed, 1);

  // A new process, first seen at its message 2: cleared, then its history from 0.
  EXPECT_THAT(Live(s, 2), ElementsAre("C", "R0"));
  EXPECT_EQ(s.counters().resets, 1);
  EXPECT_THAT(Replayed(s, 0), ElementsAre("A0"));
  EXPECT_THAT(Replayed(s, 1), ElementsAre("A1", "A2"));
  EXPECT_EQ(s.state(), StreamState::kPrecise);

  // A replay that no longer has seq 0: the slice is rebuilt from what it has.
  EventStream late({.replay_configured = true});
  EXPECT_THAT(Show(late.OnLive(20'000, "m20000", now_)), ElementsAre("R0"));
  EXPECT_THAT(Show(late.OnReplayed(10'000, "m10000", now_)), ElementsAre("C", "A10000"));
  EXPECT_EQ(late.state(), StreamState::kAwaitingReplay);
  EXPECT_EQ(late.counters().replays_failed, 1);
  EXPECT_THAT(Show(late.OnReplayEnd(now_)), ElementsAre("C", "A20000"));
  EXPECT_EQ(late.state(), StreamState::kRebuilding);
}

TEST_F(EventStreamTest, MalformedMessagesAndClearsRebuild) {
  EventStream s({});
  Live(s, 0);
  EXPECT_THAT(Show(s.OnMalformed(now_)), ElementsAre("C"));
  EXPECT_EQ(s.state(), StreamState::kRebuilding);
  EXPECT_EQ(s.counters().malformed, 1);
  s.MarkComplete();
  EXPECT_THAT(Show(s.Clear(now_)), ElementsAre("C"));
  EXPECT_EQ(s.state(), StreamState::kRebuilding);
  EXPECT_THAT(Live(s, 1), ElementsAre("A1"));
  EXPECT_EQ(s.counters().clears, 2);
}

TEST_F(EventStreamTest, ClearWithReplayRestoresTheHistoryFromSequenceZero) {
  EventStream s({.replay_configured = true});
  Live(s, 0);
  Live(s, 1);
  Live(s, 2);
  EXPECT_THAT(Show(s.Clear(now_)), ElementsAre("C", "R0"));
  EXPECT_EQ(s.state(), StreamState::kAwaitingReplay);
  // The replay is bounded by its end marker, not by its first message.
  EXPECT_THAT(Replayed(s, 0), ElementsAre("A0"));
  EXPECT_EQ(s.state(), StreamState::kAwaitingReplay);
  EXPECT_THAT(Live(s, 3), ElementsAre());  // buffered: 1 and 2 are still to come
  EXPECT_THAT(Replayed(s, 1), ElementsAre("A1"));
  EXPECT_THAT(Replayed(s, 2), ElementsAre("A2", "A3"));
  EXPECT_EQ(s.state(), StreamState::kPrecise);  // caught up with the live stream
  EXPECT_THAT(Replayed(s, 3), IsEmpty());
  EXPECT_THAT(Show(s.OnReplayEnd(now_)), IsEmpty());
  EXPECT_EQ(s.state(), StreamState::kPrecise);
  EXPECT_THAT(Live(s, 4), ElementsAre("A4"));
}

TEST_F(EventStreamTest, ClearFromReplaysTheHistoryFromTheGivenMessage) {
  EventStream s({.replay_configured = true});
  Live(s, 0);
  Live(s, 1);
  Live(s, 2);
  Live(s, 3);
  EXPECT_THAT(Show(s.ClearFrom(2, now_)), ElementsAre("C", "R2"));
  EXPECT_EQ(s.state(), StreamState::kAwaitingReplay);
  EXPECT_THAT(Replayed(s, 2), ElementsAre("A2"));
  EXPECT_THAT(Replayed(s, 3), ElementsAre("A3"));
  EXPECT_THAT(Show(s.OnReplayEnd(now_)), IsEmpty());
  EXPECT_EQ(s.state(), StreamState::kPrecise);
  EXPECT_THAT(Live(s, 4), ElementsAre("A4"));
}

TEST_F(EventStreamTest, ClearFromWithNothingSinceIsPreciseAtTheReplaysEnd) {
  EventStream s({.replay_configured = true});
  Live(s, 0);
  Live(s, 1);
  EXPECT_THAT(Show(s.ClearFrom(2, now_)), ElementsAre("C", "R2"));
  EXPECT_THAT(Show(s.OnReplayEnd(now_)), IsEmpty());
  EXPECT_EQ(s.state(), StreamState::kPrecise);
  EXPECT_THAT(Live(s, 2), ElementsAre("A2"));
}

TEST_F(EventStreamTest, ClearWithReplayIsPreciseWhenTheHistoryEnds) {
  EventStream s({.replay_configured = true});
  Live(s, 0);
  EXPECT_THAT(Show(s.Clear(now_)), ElementsAre("C", "R0"));
  EXPECT_THAT(Replayed(s, 0), ElementsAre("A0"));
  EXPECT_THAT(Show(s.OnReplayEnd(now_)), IsEmpty());
  EXPECT_EQ(s.state(), StreamState::kPrecise);
  EXPECT_EQ(s.counters().replays_completed, 1);
  EXPECT_THAT(Live(s, 1), ElementsAre("A1"));
}

TEST_F(EventStreamTest, ClearWithAnEmptyReplayIsAFreshEngine) {
  // A restarted engine that has published nothing yet stores nothing: the empty slice is exact.
  EventStream s({.replay_configured = true});
  Live(s, 0);
  Live(s, 1);
  EXPECT_THAT(Show(s.Clear(now_)), ElementsAre("C", "R0"));
  EXPECT_THAT(Show(s.OnReplayEnd(now_)), IsEmpty());
  EXPECT_EQ(s.state(), StreamState::kPrecise);
  EXPECT_THAT(Live(s, 0), ElementsAre("A0"));  // its first message
  EXPECT_EQ(s.state(), StreamState::kPrecise);
}

TEST_F(EventStreamTest, ClearWithAHistoryNoLongerWholeRebuilds) {
  EventStream s({.replay_configured = true, .rebuild_period = seconds(5)});
  Live(s, 0);
  EXPECT_THAT(Show(s.Clear(now_)), ElementsAre("C", "R0"));
  // The publisher's buffer starts at 7: 0-6 are lost, the rest still helps the rebuild.
  EXPECT_THAT(Replayed(s, 7), ElementsAre("C", "A7"));
  EXPECT_THAT(Replayed(s, 8), ElementsAre("A8"));
  EXPECT_THAT(Show(s.OnReplayEnd(now_)), IsEmpty());
  EXPECT_EQ(s.state(), StreamState::kRebuilding);
  now_ += seconds(5);
  EXPECT_THAT(Show(s.Tick(now_)), IsEmpty());
  EXPECT_EQ(s.state(), StreamState::kPrecise);
}

TEST_F(EventStreamTest, ClearWithAReplayThatNeverAnswersRebuilds) {
  EventStream s({.replay_configured = true});
  Live(s, 0);
  s.Clear(now_);
  now_ += seconds(3);  // past replay_timeout
  EXPECT_THAT(Show(s.Tick(now_)), ElementsAre("C"));
  EXPECT_EQ(s.state(), StreamState::kRebuilding);
}

}  // namespace
}  // namespace warmroute::kv_events
