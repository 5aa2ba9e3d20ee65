// The calendar date and time as a dependency, for what depends on the date (a chat template's
// strftime_now). Clock (clock.h) is monotonic time for durations; this is the wall clock. Only
// main() makes a SystemWallClock; tests use a FixedWallClock.
//
// Usage:
//   FixedWallClock clock(std::chrono::system_clock::from_time_t(1700000000));
//   std::chrono::system_clock::time_point now = clock.Now();
//
// Thread-safety: both are safe to read from any thread.
#pragma once

#include <chrono>

namespace warmroute {

class WallClock {
 public:
  WallClock() = default;
  WallClock(const WallClock&) = delete;
  WallClock& operator=(const WallClock&) = delete;
  virtual ~WallClock() = default;

  // The current calendar time (it may go backwards when the system clock is set).
  virtual std::chrono::system_clock::time_point Now() const = 0;
};

class SystemWallClock final : public WallClock {
 public:
  std::chrono::system_clock::time_point Now() const override {
    return std::chrono::system_clock::now();
  }
};

// Always the same instant.
class FixedWallClock final : public WallClock {
 public:
  explicit FixedWallClock(std::chrono::system_clock::time_point t) : t_(t) {}
  std::chrono::system_clock::time_point Now() const override { return t_; }

 private:
  std::chrono::system_clock::time_point t_;
};

}  // namespace warmroute
