#include "analyze/sizing.h"

#include <cmath>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/gnuplot.h"
#include "sim/comparison.h"
#include "sim/replica_spec.h"
#include "sim/report.h"

namespace warmroute::analyze {

absl::StatusOr<FleetPrediction> PredictFleet(const std::string& file, const std::string& profile,
                                             int64_t replicas,
                                             const std::vector<std::string>& policies) {
  sim::SimOptions options;
  options.workload.name = absl::StrCat("trace:", file);
  options.workload.num_requests = 0;
  absl::StatusOr<std::vector<sim::ReplicaSpec>> fleet = sim::UniformFleet(profile, replicas, 0);
  if (!fleet.ok()) return fleet.status();
  options.replicas = *std::move(fleet);
  absl::StatusOr<sim::Comparison> c =
      sim::RunComparison(options, policies, {}, /*bounds=*/true, nullptr);
  if (!c.ok()) return c.status();
  FleetPrediction p;
  p.fleet = sim::DescribeFleet(options.replicas);
  for (const sim::RunResult& run : c->runs) {
    const sim::Figures f = sim::ComputeFigures(run);
    p.policies.push_back(run.name);
    p.hit_rate.push_back(f.hit_rate);
    p.ttft_p50_s.push_back(f.ttft_p50_s);
    p.ttft_p99_s.push_back(f.ttft_p99_s);
  }
  const sim::RunResult* pooled = c->pooled ? &*c->pooled : nullptr;
  if (pooled != nullptr) p.pooled_hit_rate = sim::ComputeFigures(*pooled).hit_rate;
  p.table = sim::FormatTable(c->runs, pooled);
  p.markdown_table = sim::FormatMarkdownTable(c->runs, pooled);
  return p;
}

absl::StatusOr<Sizing> SizeFleet(const SizingOptions& options) {
  if (options.target_hit_rate <= 0 && options.target_ttft_p50_s <= 0) {
    return absl::InvalidArgumentError("sizing needs a target hit rate or TTFT p50");
  }
  if (options.max_replicas < 1) return absl::InvalidArgumentError("max replicas must be >= 1");
  absl::StatusOr<std::vector<sim::ReplicaSpec>> one = sim::UniformFleet(options.profile, 1, 0);
  if (!one.ok()) return one.status();
  const int64_t default_kv = one->front().kv_capacity_tokens;
  Sizing sizing;
  sizing.options = options;
  for (const double fraction : kKvFractions) {
    const auto kv = static_cast<int64_t>(std::llround(fraction * static_cast<double>(default_kv)));
    for (const int64_t replicas : kReplicaSteps) {
      if (replicas > options.max_replicas) break;
      sim::SimOptions sim;
      sim.workload.name = absl::StrCat("trace:", options.file);
      sim.workload.num_requests = 0;
      absl::StatusOr<std::vector<sim::ReplicaSpec>> fleet =
          sim::UniformFleet(options.profile, replicas, kv);
      if (!fleet.ok()) return fleet.status();
      sim.replicas = *std::move(fleet);
      absl::StatusOr<sim::Comparison> c =
          sim::RunComparison(sim, {"warmroute"}, {}, /*bounds=*/false, nullptr);
      if (!c.ok()) return c.status();
      const sim::Figures f = sim::ComputeFigures(c->runs.front());
      SizingPoint p{.kv_fraction = fraction,
                    .replicas = replicas,
                    .kv_tokens_per_replica = kv,
                    .hit_rate = f.hit_rate,
                    .ttft_p50_s = f.ttft_p50_s,
                    .meets = (options.target_hit_rate <= 0 || f.hit_rate >= options.target_hit_rate) &&
                             (options.target_ttft_p50_s <= 0 ||
                              f.ttft_p50_s <= options.target_ttft_p50_s)};
      sizing.points.push_back(p);
      if (!p.meets) continue;
      const auto total = [](const SizingPoint& x) { return x.replicas * x.kv_tokens_per_replica; };
      if (!sizing.smallest || total(p) < total(*sizing.smallest) ||
          (total(p) == total(*sizing.smallest) && p.replicas < sizing.smallest->replicas)) {
        sizing.smallest = p;
      }
    }
  }
  return sizing;
}

std::string FormatSizing(const Sizing& s) {
  std::string target;
  if (s.options.target_hit_rate > 0) {
    absl::StrAppendFormat(&target, "hit rate >= %.1f%%", 100 * s.options.target_hit_rate);
  }
  if (s.options.target_ttft_p50_s > 0) {
    absl::StrAppendFormat(&target, "%sTTFT p50 <= %.0f ms", target.empty() ? "" : " and ",
                          1000 * s.options.target_ttft_p50_s);
  }
  std::string out = absl::StrCat("\n  sizing for ", target, " (", s.options.profile,
                                 ", warmroute policy, the file at its own timestamps):\n\n");
  absl::StrAppendFormat(&out, "  %8s %14s %16s %8s %10s  %s\n", "replicas", "KV/replica",
                        "KV total (tok)", "hit", "ttft50 ms", "meets");
  for (const SizingPoint& p : s.points) {
    absl::StrAppendFormat(&out, "  %8d %14d %16d %7.1f%% %10.0f  %s\n", p.replicas,
                          p.kv_tokens_per_replica, p.replicas * p.kv_tokens_per_replica,
                          100 * p.hit_rate, 1000 * p.ttft_p50_s, p.meets ? "yes" : "");
  }
  if (s.smallest) {
    absl::StrAppendFormat(&out,
                          "\n  smallest fleet that meets it: %d x %s with %d KV tokens each "
                          "(%d in all): hit rate %.1f%%, TTFT p50 %.0f ms\n",
                          s.smallest->replicas, s.options.profile,
                          s.smallest->kv_tokens_per_replica,
                          s.smallest->replicas * s.smallest->kv_tokens_per_replica,
                          100 * s.smallest->hit_rate, 1000 * s.smallest->ttft_p50_s);
  } else {
    out += "\n  no fleet of the grid meets it (raise --max-replicas, or the target is beyond "
           "what this traffic's sharing allows: see the unbounded-cache hit rate above)\n";
  }
  return out;
}

absl::Status WriteSizingPlot(const std::string& dir, const Sizing& s) {
  if (absl::Status st = gnuplot::MakeDir(dir); !st.ok()) return st;
  const std::filesystem::path root(dir);
  std::string data = "# per KV fraction (a block each): total KV tokens, hit rate %, TTFT p50 ms\n";
  size_t blocks = 0;
  for (const double fraction : kKvFractions) {
    std::string block;
    for (const SizingPoint& p : s.points) {
      if (p.kv_fraction != fraction) continue;
      absl::StrAppendFormat(&block, "%d %.4f %.3f\n", p.replicas * p.kv_tokens_per_replica,
                            100 * p.hit_rate, 1000 * p.ttft_p50_s);
    }
    if (block.empty()) continue;
    absl::StrAppend(&data, "# kv fraction ", fraction, "\n", block, "\n\n");
    ++blocks;
  }
  std::string plot = absl::StrCat(
      gnuplot::Terminal("sizing.png"),
      "set title 'warmroute on this traffic: hit rate and TTFT p50 against the fleet KV memory'\n"
      "set xlabel 'KV tokens in the fleet'\nset logscale x\nset ylabel 'hit rate (%)'\n"
      "set y2label 'TTFT p50 (ms)'\nset ytics nomirror\nset y2tics\nset key bottom right\nplot ");
  for (size_t i = 0; i < blocks; ++i) {
    absl::StrAppend(&plot, i ? ", \\\n     " : "", "'sizing.dat' index ", i,
                    " using 1:2 with linespoints lw 2 title ",
                    gnuplot::Quote(absl::StrCat("hit, KV x", kKvFractions[i])),
                    ", 'sizing.dat' index ", i,
                    " using 1:3 axes x1y2 with linespoints dt 2 title ",
                    gnuplot::Quote(absl::StrCat("TTFT p50, KV x", kKvFractions[i])));
  }
  plot += "\n";
  if (absl::Status st = gnuplot::WriteFile(root / "sizing.dat", data); !st.ok()) return st;
  if (absl::Status st = gnuplot::WriteFile(root / "sizing.gp", plot); !st.ok()) return st;
  return gnuplot::Run(root, {"sizing.gp"});
}

}  // namespace warmroute::analyze
