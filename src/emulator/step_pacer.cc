#include "emulator/step_pacer.h"

#include <cassert>

namespace warmroute::emulator {

StepPacer::StepPacer(double time_scale, Duration max_lag)
    : time_scale_(time_scale), max_lag_(max_lag) {
  assert(time_scale > 0);
}

TimePoint StepPacer::NextStart(TimePoint now) const {
  if (idle_) return now;
  if (now - ideal_end_ > max_lag_) return now;
  return ideal_end_;
}

TimePoint StepPacer::EndOf(TimePoint start, Duration emulated) const {
  return start +
         Duration(static_cast<Duration::rep>(static_cast<double>(emulated.count()) * time_scale_));
}

void StepPacer::Finished(TimePoint ideal_end) {
  idle_ = false;
  ideal_end_ = ideal_end;
}

void StepPacer::Idle() { idle_ = true; }

double StepPacer::EmulatedSeconds(Duration wall) const { return ToSeconds(wall) / time_scale_; }

}  // namespace warmroute::emulator
