// Exact summary statistics over a set of samples: percentiles from the sorted samples, mean,
// minimum and maximum. For the simulator and the load generator's reports, where every sample is
// kept (8 bytes each: a million requests cost 8 MB) so that percentiles are exact, not binned.
//
// Percentile rule: linear interpolation between the two closest ranks (NumPy's default "linear"
// method, Hyndman & Fan type 7): for n sorted samples x[0..n-1] and q in [0, 1], h = q * (n - 1),
// P(q) = x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)]). So P(0) is the minimum,
// P(1) the maximum and P(0.5) the usual median.
//
// Usage:
//   Samples ttft;
//   ttft.Add(0.120);
//   ttft.Add(0.250);
//   double p99 = ttft.Percentile(0.99);   // sorts once, lazily
//   double mean = ttft.Mean();
//
// Thread-safety: none; one owner. Const methods may sort the samples in place (mutable), so
// they must not run concurrently either.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace warmroute::stats {

// The q-quantile of `sorted` by the rule above; 0 when `sorted` is empty. q is clamped to
// [0, 1]. REQUIRES: `sorted` is sorted in nondecreasing order.
double PercentileOfSorted(std::span<const double> sorted, double q);

class Samples {
 public:
  void Add(double value);
  void Reserve(size_t n) { values_.reserve(n); }

  size_t size() const { return values_.size(); }
  bool empty() const { return values_.empty(); }

  // 0 when empty.
  double Percentile(double q) const;
  double Mean() const;
  double Sum() const { return sum_; }
  double Min() const;
  double Max() const;

  // The samples in nondecreasing order.
  std::span<const double> Sorted() const;

 private:
  void Sort() const;

  mutable std::vector<double> values_;
  mutable bool sorted_ = true;
  double sum_ = 0;
};

// max / mean of `values` (1 means perfectly even); 0 when empty or when the mean is 0.
double MaxOverMean(std::span<const double> values);

}  // namespace warmroute::stats
