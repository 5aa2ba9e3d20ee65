// What `warmroute analyze` prints and writes: the sharing figures (prefix_sharing.h), the prefix
// groups, the hygiene findings (prefix_hygiene.h) and, when asked, the simulator's replay on a
// fleet and the sizing sweep (sizing.h), as a terminal report, Markdown and JSON.
// Each finding is a section in plain words: what varies, where, an example of it in two
// requests, what to change, and the hit rate now and after the change (infinite cache).
//
// Usage:
//   AnalysisReport r{.source = "requests.jsonl", .set = &set, .sharing = s, .findings = f};
//   std::cout << TerminalReport(r);
//   WriteFile(path, MarkdownReport(r)); WriteFile(path, JsonReport(r));
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analyze/prefix_hygiene.h"
#include "analyze/prefix_sharing.h"
#include "analyze/prompt_set.h"
#include "analyze/sizing.h"

namespace warmroute::analyze {

struct AnalysisReport {
  std::string source;
  const PromptSet* set = nullptr;
  SharingStats sharing;
  std::vector<HygieneFinding> findings;
  std::optional<FleetPrediction> fleet;  // --replicas
  std::optional<Sizing> sizing;          // --target-*
};

std::string TerminalReport(const AnalysisReport& report);
std::string MarkdownReport(const AnalysisReport& report);
std::string JsonReport(const AnalysisReport& report);

}  // namespace warmroute::analyze
