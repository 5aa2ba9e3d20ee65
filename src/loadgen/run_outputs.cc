#include "loadgen/run_outputs.h"

#include <filesystem>
#include <utility>

#include "common/gnuplot.h"
#include "loadgen/plots.h"
#include "loadgen/report.h"
#include "loadgen/results_json.h"

namespace warmroute::loadgen {

absl::StatusOr<RunOutputs> WriteRunOutputs(const std::string& dir, const BenchRun& run,
                                           const Summary& summary, bool plots) {
  if (absl::Status s = gnuplot::MakeDir(dir); !s.ok()) return s;
  const std::filesystem::path root(dir);
  RunOutputs out;
  out.results_json = (root / "results.json").string();
  if (absl::Status s = gnuplot::WriteFile(out.results_json, ResultsJson(run, summary)); !s.ok()) {
    return s;
  }
  if (plots && summary.succeeded > 0) {
    absl::StatusOr<std::vector<std::string>> drawn = WriteRunPlots(dir, run);
    if (drawn.ok()) {
      out.plots = *std::move(drawn);
    } else {
      out.plot_warning = std::string(drawn.status().message());
    }
  }
  out.report_md = (root / "report.md").string();
  if (absl::Status s = gnuplot::WriteFile(out.report_md, ReportMarkdown(run, summary, out.plots));
      !s.ok()) {
    return s;
  }
  return out;
}

}  // namespace warmroute::loadgen
