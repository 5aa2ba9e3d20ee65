#include "core/workload/sampling.h"

#include <algorithm>
#include <cmath>

namespace warmroute::workload {

ZipfSampler::ZipfSampler(size_t n, double exponent) {
  cdf_.resize(std::max<size_t>(n, 1));
  double total = 0;
  for (size_t i = 0; i < cdf_.size(); ++i) {
    total += std::pow(static_cast<double>(i + 1), -exponent);
    cdf_[i] = total;
  }
  for (double& c : cdf_) c /= total;
  cdf_.back() = 1.0;
}

size_t ZipfSampler::Sample(Rng& rng) const {
  const double u = rng.Uniform();
  const auto it = std::upper_bound(cdf_.begin(), cdf_.end(), u);
  return std::min<size_t>(static_cast<size_t>(it - cdf_.begin()), cdf_.size() - 1);
}

double ZipfSampler::Probability(size_t i) const { return i == 0 ? cdf_[0] : cdf_[i] - cdf_[i - 1]; }

std::string TenantName(uint64_t key, int num_tenants) {
  return "t" + std::to_string(key % static_cast<uint64_t>(std::max(num_tenants, 1)));
}

uint64_t StreamSeed(uint64_t seed, uint64_t salt, uint64_t stream) {
  return Mix64(Mix64(seed ^ Mix64(salt)) ^ stream);
}

}  // namespace warmroute::workload
