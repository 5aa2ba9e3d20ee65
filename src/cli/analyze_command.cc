// `warmroute analyze FILE`: is this traffic routable, and what to change in the prompts
// (src/analyze). FILE is a JSONL file of OpenAI request bodies (chat or completions, one per
// line, optional `timestamp` in seconds and `tenant`) or a Mooncake-format trace. Prints the
// report on stdout; --markdown and --json write it to files too.
//
//   warmroute analyze requests.jsonl --markdown report.md --json report.json
//
// Prompts are sensitive: the report quotes at most 160 characters of the varying lines it found
// (--no-examples leaves them out). Invalid flags exit 2, an unreadable or invalid file 1, with a
// message on stderr naming the problem (and the file's line).
#include <iostream>
#include <memory>
#include <string>

#include "analyze/analysis_report.h"
#include "analyze/prefix_hygiene.h"
#include "analyze/prefix_sharing.h"
#include "analyze/prompt_set.h"
#include "cli/commands.h"
#include "cli/output_file.h"
#include "core/workload/file_text.h"

namespace warmroute::cli {
namespace {

struct AnalyzeFlags {
  std::string file;
  std::string markdown;
  std::string json;
  size_t groups = 10;
  bool no_examples = false;
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
                                 .findings = analyze::FindHygieneDefects(*set)};
  if (f.no_examples) {
    for (analyze::HygieneFinding& finding : report.findings) {
      finding.example = "(left out: --no-examples)";
      finding.example_other = finding.example;
    }
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
  cmd->add_flag("--no-examples", flags->no_examples,
                "leave prompt text out of the report (no example lines)");
  cmd->callback([flags, exit_code] { *exit_code = RunAnalyze(*flags); });
}

}  // namespace warmroute::cli
