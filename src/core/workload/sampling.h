// Random choices shared by the generators: Zipf popularity over a fixed set of items, Poisson
// arrival times, and tenant names.
//
// Usage:
//   ZipfSampler zipf(/*n=*/16, /*exponent=*/1.0);
//   size_t prompt = zipf.Sample(rng);                  // 0 is the most popular
//   PoissonArrivals arrivals(/*rate_per_s=*/10, Rng(seed));
//   Duration t = arrivals.Next();                      // nondecreasing
//
// Thread-safety: none; one owner per object.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/rng.h"

namespace warmroute::workload {

// Samples i in [0, n) with probability proportional to 1 / (i + 1)^exponent.
class ZipfSampler {
 public:
  // REQUIRES: n >= 1, exponent >= 0 (0 is uniform).
  ZipfSampler(size_t n, double exponent);

  size_t Sample(Rng& rng) const;
  // The probability of item i.
  double Probability(size_t i) const;
  size_t size() const { return cdf_.size(); }

 private:
  std::vector<double> cdf_;  // cdf_[i] = P(item <= i); cdf_.back() == 1
};

// A Poisson process: exponential gaps of mean 1 / rate_per_s, starting from 0 (the first arrival
// is one gap after the start).
class PoissonArrivals {
 public:
  // REQUIRES: rate_per_s > 0.
  PoissonArrivals(double rate_per_s, Rng rng) : mean_gap_s_(1.0 / rate_per_s), rng_(rng) {}

  // The next arrival time, an offset from the start; nondecreasing.
  Duration Next() {
    now_s_ += rng_.Exponential(mean_gap_s_);
    return FromSeconds(now_s_);
  }

 private:
  double mean_gap_s_;
  double now_s_ = 0;  // seconds as a double: no rounding drift over a million gaps
  Rng rng_;
};

// "t<k>" for tenant k, k = key mod num_tenants. REQUIRES: num_tenants >= 1.
std::string TenantName(uint64_t key, int num_tenants);

// A seed for stream `stream` (e.g. one per session or per block) derived from the run's seed:
// distinct streams and distinct seeds give independent generators.
uint64_t StreamSeed(uint64_t seed, uint64_t salt, uint64_t stream);

}  // namespace warmroute::workload
