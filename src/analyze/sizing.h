// Sizing: the smallest fleet that gives a request file a target hit rate or TTFT p50, found by
// replaying the file in the simulator (`trace:FILE`, at its own timestamps, the warmroute policy)
// over a grid of fleets — replicas × KV capacity per replica, for one timing profile — and the
// curve of hit rate and TTFT p50 against the fleet's total KV memory. It answers "how much KV
// memory do my instances need?" from the operator's own traffic.
//
// Grid: replicas in kReplicaSteps (up to max_replicas) × KV per replica in kKvFractions of the
// profile's default capacity. A fleet meets the target when its hit rate is at least
// target_hit_rate (when > 0) and its TTFT p50 at most target_ttft_p50_s (when > 0); the smallest
// is the one with the least total KV tokens, then the fewest replicas.
//
// Usage:
//   absl::StatusOr<Sizing> s = SizeFleet({.file = "r.jsonl", .profile = "...", ...});
//   std::cout << FormatSizing(*s);
//   WriteSizingPlot("plots/", *s);
//
// Thread-safety: each call is self-contained (WriteSizingPlot runs gnuplot).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace warmroute::analyze {

inline constexpr int64_t kReplicaSteps[] = {1, 2, 4, 8, 16, 32, 64};
inline constexpr double kKvFractions[] = {0.25, 0.5, 1.0};

// The simulator's replay of a request file (at its own timestamps) on one fleet, per policy,
// with the pooled-cache bound.
struct FleetPrediction {
  std::string fleet;                 // sim::DescribeFleet
  std::vector<std::string> policies;
  std::vector<double> hit_rate, ttft_p50_s, ttft_p99_s;  // per policy
  double pooled_hit_rate = 0;
  std::string table;                 // the simulator's table (text)
  std::string markdown_table;        // and as Markdown
};

// InvalidArgument for an unknown profile, replica count or policy; the simulator's error for an
// unreadable file.
absl::StatusOr<FleetPrediction> PredictFleet(const std::string& file, const std::string& profile,
                                             int64_t replicas,
                                             const std::vector<std::string>& policies);

struct SizingOptions {
  std::string file;
  std::string profile;
  int64_t max_replicas = 16;
  double target_hit_rate = 0;    // > 0: required
  double target_ttft_p50_s = 0;  // > 0: required
};

struct SizingPoint {
  double kv_fraction = 1;  // of the profile's default KV capacity
  int64_t replicas = 0;
  int64_t kv_tokens_per_replica = 0;
  double hit_rate = 0;
  double ttft_p50_s = 0;
  bool meets = false;
};

struct Sizing {
  SizingOptions options;
  std::vector<SizingPoint> points;      // by KV fraction, then replicas
  std::optional<SizingPoint> smallest;  // the smallest fleet that meets the target
};

// InvalidArgument for an unknown profile, no target or max_replicas < 1; the simulator's error
// for an unreadable file.
absl::StatusOr<Sizing> SizeFleet(const SizingOptions& options);

std::string FormatSizing(const Sizing& sizing);

// sizing.png (hit rate and TTFT p50 against total KV tokens, one line per KV fraction) with its
// .dat and .gp in `dir`.
absl::Status WriteSizingPlot(const std::string& dir, const Sizing& sizing);

}  // namespace warmroute::analyze
