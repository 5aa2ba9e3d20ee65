// When to try again after a dependency failed: exponential back-off without I/O, on a Clock.
//
// After a failure no attempt is made for `initial`; each further failed attempt doubles the
// wait, up to `max`; a success resets it. Defaults (used for Redis): 1 s doubling to 10 s — long
// enough that a dead server costs one failed attempt per period instead of one per request,
// short enough that limits become cluster-wide again within seconds of a recovery.
//
// Usage:
//   ReconnectBackoff backoff(std::chrono::seconds(1), std::chrono::seconds(10));
//   if (!backoff.MayAttempt(clock.Now())) return Unavailable;   // waiting: fail fast
//   ... attempt ...
//   ok ? backoff.RecordSuccess() : backoff.RecordFailure(clock.Now());
//
// Thread-safety: not thread-safe; one owner.
#pragma once

#include "common/clock.h"

namespace warmroute::gateway {

class ReconnectBackoff {
 public:
  // REQUIRES: 0 < initial <= max.
  ReconnectBackoff(Duration initial, Duration max);

  // True unless a back-off period is running at `now`.
  bool MayAttempt(TimePoint now) const { return now >= next_attempt_; }
  // The time left before the next attempt (zero when one may be made now).
  Duration Remaining(TimePoint now) const;

  // An attempt failed at `now`: no attempt until now + delay, the delay doubling each time.
  void RecordFailure(TimePoint now);
  // An attempt succeeded: the next failure waits `initial` again.
  void RecordSuccess();

  // Failures since the last success.
  int consecutive_failures() const { return consecutive_failures_; }
  // The wait that the last failure started (zero after a success).
  Duration current_delay() const { return delay_; }

 private:
  Duration initial_;
  Duration max_;
  Duration delay_{0};
  TimePoint next_attempt_{};
  int consecutive_failures_ = 0;
};

}  // namespace warmroute::gateway
