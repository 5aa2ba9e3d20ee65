// Seeded randomness as a dependency. Every random choice in core code (timing jitter, generated
// text, workload arrivals, random routing) draws from an Rng it was handed, so a fixed seed gives
// identical runs. Only main() picks seeds.
//
// Usage:
//   Rng rng(42);
//   double u = rng.Uniform();              // [0, 1)
//   uint64_t k = rng.UniformInt(10);       // [0, 10)
//   Rng child = rng.Fork();                // an independent stream, deterministic
//
// Thread-safety: none; one owner per Rng.
#pragma once

#include <cstdint>

namespace warmroute {

// xoshiro256** seeded through splitmix64: fast, small, and identical on every platform (unlike
// std:: distributions, whose output is implementation-defined).
class Rng {
 public:
  explicit Rng(uint64_t seed);

  uint64_t Next();
  // Uniform in [0, 1).
  double Uniform();
  // Uniform in [0, n). REQUIRES: n > 0.
  uint64_t UniformInt(uint64_t n);
  // Exponential with the given mean. REQUIRES: mean > 0.
  double Exponential(double mean);
  // Normal with mean 0 and standard deviation 1 (Box-Muller).
  double Normal();
  // A new generator seeded from this one.
  Rng Fork();

 private:
  uint64_t s_[4];
};

// splitmix64 finaliser: a good 64-bit mix, useful to derive seeds from ids.
uint64_t Mix64(uint64_t x);

}  // namespace warmroute
