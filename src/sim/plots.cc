#include "sim/plots.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace warmroute::sim {
namespace {

constexpr size_t kMaxCdfPoints = 2000;
constexpr size_t kMaxReplicaLines = 16;

// A file name made of the policy name's safe characters.
std::string Slug(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

// gnuplot string literal (single quotes; a quote is doubled).
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

// POSIX shell single-quoted word.
std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

absl::Status WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text;
  file.close();
  if (!file) return absl::InternalError(absl::StrCat("cannot write ", path.string()));
  return absl::OkStatus();
}

std::string CdfData(const RunResult& run) {
  std::string out = absl::StrCat("# ", run.name, ": ttft_ms cdf\n");
  const auto sorted = run.ttft_s.Sorted();
  const size_t n = sorted.size();
  const size_t step = std::max<size_t>(1, n / kMaxCdfPoints);
  for (size_t i = 0; i < n; i += step) {
    absl::StrAppendFormat(&out, "%.6g %.6g\n", 1000 * sorted[i],
                          static_cast<double>(i + 1) / static_cast<double>(n));
  }
  if (n > 0) absl::StrAppendFormat(&out, "%.6g 1\n", 1000 * sorted.back());
  return out;
}

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

std::string Terminal(const std::string& png) {
  return absl::StrCat("set terminal pngcairo size 1100,650 noenhanced\nset output ", Quote(png),
                      "\nset grid\nset key outside right top\n");
}

absl::Status RunGnuplot(const std::filesystem::path& root,
                        const std::vector<std::string>& scripts) {
  for (const std::string& script : scripts) {
    const std::string command =
        absl::StrCat("cd ", ShellQuote(root.string()), " && gnuplot ", ShellQuote(script));
    if (std::system(command.c_str()) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("gnuplot failed on ", (root / script).string(),
                       " (is gnuplot-nox installed?); the data and script are left there"));
    }
  }
  return absl::OkStatus();
}

absl::Status MakeDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteSweepPlot(const std::string& dir, const std::vector<SweepPoint>& sweep) {
  if (absl::Status s = MakeDir(dir); !s.ok()) return s;
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
  return RunGnuplot(root, {"ttft_p99_vs_load.gp"});
}

absl::Status WritePlots(const std::string& dir, const std::vector<RunResult>& runs) {
  if (absl::Status s = MakeDir(dir); !s.ok()) return s;
  const std::filesystem::path root(dir);
  std::vector<std::string> scripts;

  std::string cdf_data;
  std::string cdf_plot = absl::StrCat(Terminal("ttft_cdf.png"),
                                      "set title 'TTFT CDF'\nset xlabel 'TTFT (ms)'\n"
                                      "set ylabel 'fraction of requests'\nset logscale x\n"
                                      "set yrange [0:1]\nplot ");
  for (size_t i = 0; i < runs.size(); ++i) {
    cdf_data += CdfData(runs[i]) + "\n\n";
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

  return RunGnuplot(root, scripts);
}

}  // namespace warmroute::sim
