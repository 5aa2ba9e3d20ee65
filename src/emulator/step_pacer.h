// When each emulated scheduler step starts, on the wall clock.
//
// The rule: a step that follows another without a pause starts at the previous step's *ideal*
// end (its start + its duration × time_scale), not at the moment the timer actually fired, so
// timer and delivery lateness never accumulates over a long run of steps — a late step is
// followed by a step that ends on the ideal timeline again. A step that follows an idle period
// starts now. When the loop has fallen behind its ideal timeline by more than max_lag (default
// 250 ms of wall time: the process was starved, e.g. stopped or swapping), the timeline is reset
// to now rather than replaying the missed steps back to back.
//
// Usage:
//   StepPacer pacer(/*time_scale=*/1.0);
//   TimePoint start = pacer.NextStart(clock.Now());
//   TimePoint end = pacer.EndOf(start, out.duration);   // wait until `end`, deliver events
//   pacer.Finished(end);                                // or pacer.Idle() when there is no work
//
// Thread-safety: none; owned by the replica's step loop.
#pragma once

#include <chrono>

#include "common/clock.h"

namespace warmroute::emulator {

class StepPacer {
 public:
  // time_scale: wall seconds per emulated second. REQUIRES: time_scale > 0.
  explicit StepPacer(double time_scale, Duration max_lag = std::chrono::duration_cast<Duration>(
                                            std::chrono::milliseconds(250)));

  // The wall time at which the next step starts, given the current wall time `now`.
  TimePoint NextStart(TimePoint now) const;

  // The wall time at which a step starting at `start` and lasting `emulated` ends.
  TimePoint EndOf(TimePoint start, Duration emulated) const;

  // Records that a step ended (ideally) at `ideal_end` and another may follow without a pause.
  void Finished(TimePoint ideal_end);

  // Records that the engine ran out of work: the next step starts when it is asked for.
  void Idle();

  // Wall duration → emulated seconds.
  double EmulatedSeconds(Duration wall) const;

 private:
  double time_scale_;
  Duration max_lag_;
  bool idle_ = true;
  TimePoint ideal_end_{};
};

}  // namespace warmroute::emulator
