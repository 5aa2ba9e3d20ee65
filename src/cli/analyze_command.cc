// `warmroute analyze FILE`: is this traffic routable, and what to change in the prompts
// (src/analyze). FILE is a JSONL file of OpenAI request bodies (chat or completions, one per
// line, optional `timestamp` in seconds and `tenant`) or a Mooncake-format trace. Prints the
// report on stdout; --markdown and --json write it to files too. With --replicas, the file is
// also replayed by the simulator (`warmroute sim --workload trace:FILE`, at its own timestamps)
// on that fleet for each of --policies, with the pooled-cache bound: the hit rate and TTFT each
// policy would give this traffic. --plots DIR draws the figures (analyze/analysis_plots.h).
//
//   warmroute analyze requests.jsonl --markdown report.md --json report.json
//   warmroute analyze requests.jsonl --replicas 8 --profile llama-3.1-70b-tp4-h100
//
// Prompts are sensitive: the report quotes at most 160 characters of the varying lines it found
// (--no-examples leaves them out). Invalid flags exit 2, an unreadable or invalid file 1, with a
// message on stderr naming the problem (and the file's line).
#include <iostream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "analyze/analysis_plots.h"
#include "analyze/analysis_report.h"
#include "analyze/prefix_hygiene.h"
#include "analyze/prefix_sharing.h"
#include "analyze/prompt_set.h"
#include "analyze/sizing.h"
#include "cli/commands.h"
#include "cli/output_file.h"
#include "core/workload/file_text.h"
#include "sim/replica_spec.h"

namespace warmroute::cli {
namespace {

struct AnalyzeFlags {
  std::string file;
  std::string markdown;
  std::string json;
  size_t groups = 10;
  bool no_examples = false;
  int64_t replicas = 0;  // 0: no simulation
  std::string profile = "llama-3.1-70b-tp4-h100";
  std::string policies = "warmroute,round_robin,least_request,consistent_hash,sglang_cache_aware";
  double target_hit_rate = 0;
  double target_ttft_p50_ms = 0;
  int64_t max_replicas = 16;
  std::string plots;
};

int Fail(int code, const absl::Status& status) {
  std::cerr << "warmroute analyze: " << status.message() << "\n";
  return code;
}

int RunAnalyze(const AnalyzeFlags& f) {
  absl::StatusOr<std::string> text = workload::ReadFileText(f.file, "request file");
  if (!text.ok()) return Fail(1, text.status());
  absl::StatusOr<analyze::PromptSet> set = analyze::ReadPromptSet(f.file, *text);
  if (!set.ok()) return Fail(1, set.status());
  analyze::AnalysisReport report{.source = f.file,
                                 .set = &*set,
                                 .sharing = analyze::AnalyzeSharing(
                                     *set, set->format == "requests" ? 16 : 1, f.groups),
                                 .findings = analyze::FindHygieneDefects(*set),
                                 .fleet = std::nullopt,
                                 .sizing = std::nullopt};
  if (f.no_examples) {
    for (analyze::HygieneFinding& finding : report.findings) {
      finding.example = "(left out: --no-examples)";
      finding.example_other = finding.example;
    }
  }
  if (f.replicas > 0) {
    absl::StatusOr<analyze::FleetPrediction> fleet = analyze::PredictFleet(
        f.file, f.profile, f.replicas, absl::StrSplit(f.policies, ',', absl::SkipEmpty()));
    if (!fleet.ok()) return Fail(1, fleet.status());
    report.fleet = *std::move(fleet);
  }
  if (f.target_hit_rate > 0 || f.target_ttft_p50_ms > 0) {
    absl::StatusOr<analyze::Sizing> sizing =
        analyze::SizeFleet({.file = f.file,
                            .profile = f.profile,
                            .max_replicas = f.max_replicas,
                            .target_hit_rate = f.target_hit_rate,
                            .target_ttft_p50_s = f.target_ttft_p50_ms / 1000});
    if (!sizing.ok()) return Fail(1, sizing.status());
    report.sizing = *std::move(sizing);
  }
  std::cout << analyze::TerminalReport(report);
  if (!f.markdown.empty()) {
    if (absl::Status s = WriteTextFile(f.markdown, analyze::MarkdownReport(report)); !s.ok()) {
      return Fail(1, s);
    }
  }
  if (!f.json.empty()) {
    if (absl::Status s = WriteTextFile(f.json, analyze::JsonReport(report)); !s.ok()) {
      return Fail(1, s);
    }
  }
  // Last: without gnuplot the reports are written all the same.
  if (!f.plots.empty()) {
    if (absl::Status s = analyze::WriteAnalysisPlots(f.plots, report); !s.ok()) return Fail(1, s);
  }
  return 0;
}

}  // namespace

void AddAnalyzeCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<AnalyzeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "analyze",
      "is this traffic routable: prefix sharing, the largest prefix groups, and prompt defects "
      "(an early timestamp, id, name, reordered tools) with the hit rate their fix would bring");
  cmd->add_option("file", flags->file,
                  "JSONL of OpenAI request bodies (optional timestamp, tenant) or a Mooncake trace")
      ->required();
  cmd->add_option("--markdown", flags->markdown, "also write the report as Markdown to this file");
  cmd->add_option("--json", flags->json, "also write the report as JSON to this file");
  cmd->add_option("--groups", flags->groups, "prefix groups listed")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--replicas", flags->replicas,
                  "also replay the file in the simulator on this many replicas")
      ->check(CLI::Range(int64_t{1}, sim::kMaxReplicas));
  cmd->add_option("--profile", flags->profile, "timing profile of the simulated replicas")
      ->capture_default_str();
  cmd->add_option("--policies", flags->policies, "policies the simulator compares")
      ->capture_default_str();
  cmd->add_option("--target-hit-rate", flags->target_hit_rate,
                  "sizing: the smallest fleet of --profile replicas (a grid of replicas x KV per "
                  "replica, simulated) reaching this hit rate, 0..1")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--target-ttft-p50-ms", flags->target_ttft_p50_ms,
                  "sizing: ... and/or this TTFT p50")
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--max-replicas", flags->max_replicas, "sizing: the largest fleet tried")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{64}));
  cmd->add_option("--plots", flags->plots,
                  "write plots here (with their .dat and .gp; needs gnuplot): prefix_groups.png "
                  "(group sizes by rank, reuse distance), hygiene.png (hit rate now and fixed, "
                  "per finding) and, with a sizing target, sizing.png")
      ->type_name("DIR");
  cmd->add_flag("--no-examples", flags->no_examples,
                "leave prompt text out of the report (no example lines)");
  cmd->callback([flags, exit_code] { *exit_code = RunAnalyze(*flags); });
}

}  // namespace warmroute::cli
