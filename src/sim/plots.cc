#include "sim/plots.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/gnuplot.h"

namespace warmroute::sim {
namespace {

using gnuplot::Quote;
using gnuplot::Slug;
using gnuplot::Terminal;
using gnuplot::WriteFile;

constexpr size_t kMaxReplicaLines = 16;

std::string LoadData(const RunResult& run, bool per_replica) {
  const auto& queue = run.series.queue;
  size_t samples = 0;
  for (const auto& s : queue) samples = std::max(samples, s.size());
  std::string out = per_replica ? "# t_s, then requests in engine per replica\n"
                                : "# t_s min mean max requests in engine over replicas\n";
  for (size_t k = 0; k < samples; ++k) {
    absl::StrAppendFormat(&out, "%.6g", run.series.interval_s * static_cast<double>(k + 1));
    double lo = 0, hi = 0, sum = 0;
    for (size_t r = 0; r < queue.size(); ++r) {
      const double v = k < queue[r].size() ? queue[r][k] : 0;
      if (per_replica) absl::StrAppendFormat(&out, " %g", v);
      lo = r == 0 ? v : std::min(lo, v);
      hi = r == 0 ? v : std::max(hi, v);
      sum += v;
    }
    if (!per_replica) {
      absl::StrAppendFormat(&out, " %g %g %g", lo, sum / static_cast<double>(queue.size()), hi);
    }
    out += "\n";
  }
  return out;
}

// hit_rate_series.{dat,gp}: one data block per run (window midpoint, hit rate in percent; NaN for
// a window without requests), a dashed line at the membership change if there was one.
absl::Status WriteHitRatePlot(const std::filesystem::path& root,
                              const std::vector<RunResult>& runs) {
  std::string data;
  std::string plot = absl::StrCat(Terminal("hit_rate_series.png"),
                                  "set xlabel 'arrival time (s)'\n"
                                  "set ylabel 'hit rate (% of prompt tokens)'\n");
  std::string title = "hit rate per window of arrivals";
  for (const RunResult& run : runs) {
    if (!run.membership) continue;
    const double at_s = ToSeconds(run.membership->at);
    absl::StrAppendFormat(&plot, "set arrow from %g, graph 0 to %g, graph 1 nohead dt 2\n", at_s,
                          at_s);
    title += ": " + DescribeMembershipChange(*run.membership);
    break;
  }
  absl::StrAppend(&plot, "set title ", Quote(title), "\nplot ");
  for (size_t i = 0; i < runs.size(); ++i) {
    const HitRateSeries& series = runs[i].hit_series;
    absl::StrAppend(&data, "# ", runs[i].name, ": window midpoint (s), hit rate (%)\n");
    for (size_t k = 0; k < series.size(); ++k) {
      absl::StrAppendFormat(&data, "%.6g %.6g\n", series.start_s(k) + series.window_s / 2,
                            100 * series.hit_rate(k));
    }
    data += "\n\n";
    absl::StrAppend(&plot, i ? ", \\\n     " : "", "'hit_rate_series.dat' index ", i,
                    " using 1:2 with lines lw 2 title ", Quote(runs[i].name));
  }
  plot += "\n";
  if (absl::Status s = WriteFile(root / "hit_rate_series.dat", data); !s.ok()) return s;
  return WriteFile(root / "hit_rate_series.gp", plot);
}

}  // namespace

absl::Status WriteSweepPlot(const std::string& dir, const std::vector<SweepPoint>& sweep) {
  if (absl::Status s = gnuplot::MakeDir(dir); !s.ok()) return s;
  const std::filesystem::path root(dir);
  std::string data = "# load_percent, then TTFT p99 (ms) per policy\n";
  for (const SweepPoint& p : sweep) {
    absl::StrAppendFormat(&data, "%g", 100 * p.load);
    for (const Figures& f : p.figures) absl::StrAppendFormat(&data, " %.6g", 1000 * f.ttft_p99_s);
    data += "\n";
  }
  std::string plot = absl::StrCat(Terminal("ttft_p99_vs_load.png"),
                                  "set title 'TTFT p99 against offered load'\n"
                                  "set xlabel 'load (% of calibrated fleet capacity)'\n"
                                  "set ylabel 'TTFT p99 (ms)'\nset logscale y\nplot ");
  const std::vector<std::string> names =
      sweep.empty() ? std::vector<std::string>{} : sweep.front().policies;
  for (size_t i = 0; i < names.size(); ++i) {
    absl::StrAppend(&plot, i ? ", \\\n     " : "", "'ttft_p99_vs_load.dat' using 1:", i + 2,
                    " with linespoints lw 2 title ", Quote(names[i]));
  }
  plot += "\n";
  if (absl::Status s = WriteFile(root / "ttft_p99_vs_load.dat", data); !s.ok()) return s;
  if (absl::Status s = WriteFile(root / "ttft_p99_vs_load.gp", plot); !s.ok()) return s;
  return gnuplot::Run(root, {"ttft_p99_vs_load.gp"});
}

absl::Status WritePlots(const std::string& dir, const std::vector<RunResult>& runs) {
  if (absl::Status s = gnuplot::MakeDir(dir); !s.ok()) return s;
  const std::filesystem::path root(dir);
  std::vector<std::string> scripts;

  std::string cdf_data;
  std::string cdf_plot = absl::StrCat(Terminal("ttft_cdf.png"),
                                      "set title 'TTFT CDF'\nset xlabel 'TTFT (ms)'\n"
                                      "set ylabel 'fraction of requests'\nset logscale x\n"
                                      "set yrange [0:1]\nplot ");
  for (size_t i = 0; i < runs.size(); ++i) {
    cdf_data += gnuplot::CdfData(runs[i].name + " ttft_ms", runs[i].ttft_s.Sorted(), 1000) + "\n\n";
    absl::StrAppend(&cdf_plot, i ? ", \\\n     " : "", "'ttft_cdf.dat' index ", i,
                    " using 1:2 with lines lw 2 title ", Quote(runs[i].name));
  }
  cdf_plot += "\n";
  if (absl::Status s = WriteFile(root / "ttft_cdf.dat", cdf_data); !s.ok()) return s;
  if (absl::Status s = WriteFile(root / "ttft_cdf.gp", cdf_plot); !s.ok()) return s;
  scripts.push_back("ttft_cdf.gp");

  for (const RunResult& run : runs) {
    const std::string slug = "load_" + Slug(run.name);
    const size_t n = run.series.queue.size();
    const bool per_replica = n <= kMaxReplicaLines;
    std::string plot = absl::StrCat(Terminal(slug + ".png"), "set title ",
                                    Quote("requests in engine per replica: " + run.name),
                                    "\nset xlabel 'time (s)'\nset ylabel 'running + waiting'\n");
    if (per_replica) {
      absl::StrAppend(&plot, "plot for [i=2:", n + 1, "] '", slug,
                      ".dat' using 1:i with lines title sprintf('r%d', i - 2)\n");
    } else {
      absl::StrAppend(&plot, "plot '", slug, ".dat' using 1:2:4 with filledcurves ",
                      "fs transparent solid 0.3 title 'min..max', '", slug,
                      ".dat' using 1:3 with lines lw 2 title 'mean'\n");
    }
    if (absl::Status s = WriteFile(root / (slug + ".dat"), LoadData(run, per_replica)); !s.ok()) {
      return s;
    }
    if (absl::Status s = WriteFile(root / (slug + ".gp"), plot); !s.ok()) return s;
    scripts.push_back(slug + ".gp");
  }

  if (absl::Status s = WriteHitRatePlot(root, runs); !s.ok()) return s;
  scripts.push_back("hit_rate_series.gp");
  return gnuplot::Run(root, scripts);
}

}  // namespace warmroute::sim
