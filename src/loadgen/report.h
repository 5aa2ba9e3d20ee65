// Tables of `warmroute bench`: the summary printed on stdout, report.md, and the side-by-side
// table of `warmroute bench compare`. Times are shown in milliseconds, rates as percentages;
// a figure that was not measured shows as "-".
//
// Usage:
//   std::cout << SummaryTable(run.config.name, summary);
//   WriteFile("report.md", ReportMarkdown(run, summary, {"ttft_cdf.png"}));
//   std::cout << CompareTable(saved_runs);
//   std::cout << PolicyTable(saved_runs, /*markdown=*/false);
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "loadgen/bench_result.h"
#include "loadgen/results_json.h"

namespace warmroute::loadgen {

// An aligned plain-text table: one row per figure, one value column per run.
std::string SummaryTable(const std::string& name, const Summary& summary);

// report.md: the configuration, the summary table, errors by kind with a sample reason each,
// per-backend shares, and links to `plots` (PNG file names in the same directory).
std::string ReportMarkdown(const BenchRun& run, const Summary& summary,
                           const std::vector<std::string>& plots);

// One table with a column per run (labelled by its name).
std::string CompareTable(const std::vector<SavedRun>& runs);

// The headline table of `warmroute demo`: one row per run (labelled by its name) with the
// engine-reported hit rate, TTFT p50/p99, E2E p50, load imbalance (max/mean requests per
// backend) and failed requests. Aligned text, or Markdown when `markdown`.
std::string PolicyTable(const std::vector<SavedRun>& runs, bool markdown);

}  // namespace warmroute::loadgen
