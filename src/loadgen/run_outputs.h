// The files of one `warmroute bench` run, written into one directory: results.json
// (loadgen/results_json.h), PNG plots (loadgen/plots.h) and report.md (loadgen/report.h).
// Shared by `warmroute bench` and `warmroute demo` (one directory per policy).
//
// Usage:
//   Summary summary = Summarize(run);
//   absl::StatusOr<RunOutputs> out = WriteRunOutputs("bench-out", run, summary, /*plots=*/true);
//   if (out.ok() && !out->plot_warning.empty()) warn(out->plot_warning);
//
// Thread-safety: writes files and runs gnuplot; call from one thread.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "loadgen/bench_result.h"

namespace warmroute::loadgen {

struct RunOutputs {
  std::string results_json;        // path
  std::string report_md;           // path
  std::vector<std::string> plots;  // PNG file names inside the directory
  std::string plot_warning;        // why there are no plots (gnuplot missing, ...); "" when drawn
};

// Creates `dir` and writes the files there; plots only when `plots` and some request succeeded.
// Internal when a file cannot be written (a plot that cannot be drawn is only a warning).
absl::StatusOr<RunOutputs> WriteRunOutputs(const std::string& dir, const BenchRun& run,
                                           const Summary& summary, bool plots);

}  // namespace warmroute::loadgen
