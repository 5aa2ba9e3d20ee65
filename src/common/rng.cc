#include "common/rng.h"

#include <cmath>

namespace warmroute {
namespace {
uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

Rng::Rng(uint64_t seed) {
  for (uint64_t& s : s_) {
    seed += 0x9e3779b97f4a7c15ULL;
    s = Mix64(seed);
  }
}

uint64_t Rng::Next() {
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

double Rng::Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

uint64_t Rng::UniformInt(uint64_t n) {
  // Lemire's multiply-shift; the tiny bias for huge n is irrelevant here.
  return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
}

double Rng::Exponential(double mean) { return -mean * std::log1p(-Uniform()); }

double Rng::Normal() {
  double u1 = Uniform();
  while (u1 <= 0.0) u1 = Uniform();
  const double u2 = Uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

Rng Rng::Fork() { return Rng(Next()); }

}  // namespace warmroute
