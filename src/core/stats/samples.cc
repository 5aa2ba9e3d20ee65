#include "core/stats/samples.h"

#include <algorithm>
#include <cmath>

namespace warmroute::stats {

double PercentileOfSorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const double h = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= sorted.size()) return sorted.back();
  const double frac = h - static_cast<double>(lo);
  return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

void Samples::Add(double value) {
  if (!values_.empty() && value < values_.back()) sorted_ = false;
  values_.push_back(value);
  sum_ += value;
}

void Samples::Sort() const {
  if (!sorted_) {
    std::sort(values_.begin(), values_.end());
    sorted_ = true;
  }
}

double Samples::Percentile(double q) const {
  Sort();
  return PercentileOfSorted(values_, q);
}

double Samples::Mean() const {
  return values_.empty() ? 0 : sum_ / static_cast<double>(values_.size());
}

double Samples::Min() const {
  Sort();
  return values_.empty() ? 0 : values_.front();
}

double Samples::Max() const {
  Sort();
  return values_.empty() ? 0 : values_.back();
}

std::span<const double> Samples::Sorted() const {
  Sort();
  return values_;
}

double MaxOverMean(std::span<const double> values) {
  if (values.empty()) return 0;
  double sum = 0;
  double max = values.front();
  for (double v : values) {
    sum += v;
    max = std::max(max, v);
  }
  const double mean = sum / static_cast<double>(values.size());
  return mean > 0 ? max / mean : 0;
}

}  // namespace warmroute::stats
