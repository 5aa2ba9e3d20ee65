// PNG plots of `warmroute bench` (gnuplot via common/gnuplot.h; each PNG beside its .dat and
// .gp so it can be redrawn):
//   ttft_cdf.png            TTFT CDF, log-scale time axis
//   ttft_over_time.png      every request's TTFT against its send time
//   hit_rate_over_time.png  token hit rate per time bucket, from the responses' usage (by end
//                           time) and, with --engine-metrics, from the engines' counters
//   backend_load.png        requests per second per backend (x-warmroute-backend by send time,
//                           else the engines' request_success deltas); only when known
// and for `bench compare`: ttft_cdf_compare.png, one line per run.
//
// Thread-safety: writes files and runs gnuplot; call from one thread.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "loadgen/bench_result.h"
#include "loadgen/results_json.h"

namespace warmroute::loadgen {

// Writes data, scripts and PNGs into `dir`; returns the PNG file names. FailedPrecondition when
// gnuplot is missing or fails (data and scripts stay), Internal when `dir` cannot be written.
absl::StatusOr<std::vector<std::string>> WriteRunPlots(const std::string& dir, const BenchRun& run);

// ttft_cdf_compare.png in `dir`; returns its path.
absl::StatusOr<std::string> WriteCompareCdf(const std::string& dir,
                                            const std::vector<SavedRun>& runs);

}  // namespace warmroute::loadgen
