// Time as a dependency. Core code (engine model, routing policies) never reads the real clock:
// it is handed a Clock. Only main() makes a SystemClock; tests and the simulator use a
// ManualClock and advance it themselves.
//
// Usage:
//   ManualClock clock;                       // starts at TimePoint{} (zero)
//   clock.Advance(std::chrono::milliseconds(5));
//   TimePoint t = clock.Now();
//
// Thread-safety: SystemClock is thread-safe. ManualClock is not: its owner advances it.
#pragma once

#include <chrono>

namespace warmroute {

using Duration = std::chrono::nanoseconds;
using TimePoint = std::chrono::time_point<std::chrono::steady_clock, Duration>;

// Seconds as a double, for metrics and rate arithmetic.
inline double ToSeconds(Duration d) { return std::chrono::duration<double>(d).count(); }
inline Duration FromSeconds(double s) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}

class Clock {
 public:
  Clock() = default;
  Clock(const Clock&) = delete;
  Clock& operator=(const Clock&) = delete;
  virtual ~Clock() = default;

  // The current time. Monotonic: never smaller than a previous call's result.
  virtual TimePoint Now() const = 0;
};

// Real monotonic time (std::chrono::steady_clock).
class SystemClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
};

// Time that moves only when told to.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimePoint start = TimePoint{}) : now_(start) {}
  TimePoint Now() const override { return now_; }
  // REQUIRES: d >= 0.
  void Advance(Duration d) { now_ += d; }
  // REQUIRES: t >= Now().
  void Set(TimePoint t) { now_ = t; }

 private:
  TimePoint now_;
};

}  // namespace warmroute
