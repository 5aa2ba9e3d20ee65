#include "emulator/step_pacer.h"

#include "gtest/gtest.h"

namespace warmroute::emulator {
namespace {

using std::chrono::milliseconds;

TimePoint At(int ms) { return TimePoint{} + milliseconds(ms); }

TEST(StepPacerTest, FirstStepStartsNow) {
  StepPacer pacer(1.0);
  EXPECT_EQ(pacer.NextStart(At(1000)), At(1000));
}

TEST(StepPacerTest, BackToBackStepsFollowTheIdealTimelineDespiteLateTimers) {
  StepPacer pacer(1.0);
  TimePoint start = pacer.NextStart(At(0));
  TimePoint end = pacer.EndOf(start, milliseconds(10));
  EXPECT_EQ(end, At(10));
  pacer.Finished(end);
  // The timer fired 3 ms late: the next step still starts at the ideal end.
  start = pacer.NextStart(At(13));
  EXPECT_EQ(start, At(10));
  end = pacer.EndOf(start, milliseconds(10));
  EXPECT_EQ(end, At(20));
  pacer.Finished(end);
  // Ten more late steps end exactly where ten ideal steps would.
  for (int i = 0; i < 10; ++i) {
    const TimePoint fired = end + milliseconds(2);  // every timer fires 2 ms late
    start = pacer.NextStart(fired);
    end = pacer.EndOf(start, milliseconds(10));
    pacer.Finished(end);
  }
  EXPECT_EQ(end, At(120));
}

TEST(StepPacerTest, StepAfterIdleStartsNow) {
  StepPacer pacer(1.0);
  pacer.Finished(At(10));
  pacer.Idle();
  EXPECT_EQ(pacer.NextStart(At(500)), At(500));
}

TEST(StepPacerTest, TimelineResetsWhenFarBehind) {
  StepPacer pacer(1.0, milliseconds(250));
  pacer.Finished(At(10));
  EXPECT_EQ(pacer.NextStart(At(200)), At(10));     // 190 ms behind: catch up
  EXPECT_EQ(pacer.NextStart(At(1000)), At(1000));  // 990 ms behind: give up, start now
}

TEST(StepPacerTest, TimeScaleStretchesWallDurations) {
  StepPacer slow(2.0);
  EXPECT_EQ(slow.EndOf(At(0), milliseconds(10)), At(20));
  EXPECT_DOUBLE_EQ(slow.EmulatedSeconds(milliseconds(20)), 0.010);
  StepPacer fast(0.1);
  EXPECT_EQ(fast.EndOf(At(0), milliseconds(10)), At(1));
  EXPECT_DOUBLE_EQ(fast.EmulatedSeconds(milliseconds(1)), 0.010);
}

}  // namespace
}  // namespace warmroute::emulator
