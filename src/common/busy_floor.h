#ifndef WARMROUTE_COMMON_BUSY_FLOOR_H_
#define WARMROUTE_COMMON_BUSY_FLOOR_H_

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace warmroute {

// The machine's floor under a tail latency, for benchmarks: a busy loop calibrated to last `us`
// microseconds, timed `runs` times on the steady clock, one after another; returns the durations
// in microseconds. On a virtual machine a timer interrupt or a host preemption costs tens of
// microseconds, and a computation of a few microseconds meets one about once in a hundred runs,
// which alone sets its p99 whatever the code does: a benchmark that reports the floor beside its
// own percentiles shows which part of its tail is the machine's.
inline std::vector<double> BusyFloorUs(double us, size_t runs) {
  uint64_t x = 1;
  const auto spin = [&x](uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      asm volatile("" : "+r"(x));  // kept: the loop's only effect is its duration
    }
  };
  constexpr uint64_t kCalibration = 1'000'000;
  double ns_per_step = 1e9;
  for (int i = 0; i < 3; ++i) {  // the fastest of three: an interrupt only slows one down
    const auto start = std::chrono::steady_clock::now();
    spin(kCalibration);
    const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    ns_per_step = std::min(ns_per_step, took.count() / kCalibration);
  }
  const auto steps = static_cast<uint64_t>(us * 1e3 / ns_per_step);
  std::vector<double> floor;
  floor.reserve(runs);
  for (size_t i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    spin(steps);
    floor.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  return floor;
}

}  // namespace warmroute

#endif  // WARMROUTE_COMMON_BUSY_FLOOR_H_
