// PNG plots of a `warmroute sim` run, drawn by gnuplot (gnuplot-nox, pngcairo terminal):
//   ttft_cdf.png          TTFT CDF of every policy, log-scale time axis
//   load_<policy>.png     per-replica load (requests in the engine) over time, one per policy
//                         (one line per replica up to 16 replicas; min / mean / max beyond)
//   hit_rate_series.png   hit rate per window of arrivals (RunResult::hit_series) of every policy,
//                         the membership change (if any) marked by a dashed line
//   ttft_p99_vs_load.png  a load sweep: TTFT p99 of every policy against offered load
// Each PNG comes with its .dat data and .gp script in the same directory, so a plot can be
// restyled and redrawn with `gnuplot FILE.gp` from that directory.
//
// Thread-safety: writes files and runs a child process; call from one thread.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sim/report.h"
#include "sim/run_result.h"

namespace warmroute::sim {

// Writes the data and scripts into `dir` (created if missing) and runs gnuplot on them.
// Internal error when the directory cannot be written; FailedPrecondition when gnuplot is not
// installed or fails (the data and scripts are left in place).
absl::Status WritePlots(const std::string& dir, const std::vector<RunResult>& runs);

// Same for a load sweep's ttft_p99_vs_load.png.
absl::Status WriteSweepPlot(const std::string& dir, const std::vector<SweepPoint>& sweep);

}  // namespace warmroute::sim
