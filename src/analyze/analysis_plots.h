// The plots `warmroute analyze --plots DIR` draws (with gnuplot, common/gnuplot.h): each a PNG
// with its .dat and .gp beside it in DIR, so the operator can restyle and redraw it by hand.
//
//   prefix_groups.png  the prefix groups of two or more requests (prefix_sharing.h), one line of
//                      prefix_groups.dat each, biggest first. Left: requests per group by rank:
//                      how concentrated the traffic is (steep: a few prefixes carry it; flat:
//                      many, each needing its own place in the cache). Right: each group's size
//                      against its median reuse distance in seconds: how long the cache must keep
//                      each prefix. The axes are logarithmic where the values span a factor of 10
//                      or more, linear below. A group whose requests all came at the same second
//                      (distance 0) has no place on a log axis: the panel's title counts those.
//                      With no group, both panels say so.
//   hygiene.png        per prefix-hygiene finding (prefix_hygiene.h), the unbounded-cache hit
//                      rate now and with that difference fixed, as a pair of bars. With no
//                      finding (or a trace, which has no prompt text) the chart says so and
//                      hygiene.dat holds only its header: the directory always gets the same
//                      files, so a rerun into it never leaves an earlier file's bars behind.
//   sizing.png         when the report has a sizing (sizing.h).
//
// Usage:
//   if (absl::Status s = WriteAnalysisPlots("plots/", report); !s.ok()) return s;
//
// Thread-safety: the *Data functions are pure; WriteAnalysisPlots writes files and runs gnuplot.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "analyze/analysis_report.h"
#include "analyze/prefix_hygiene.h"
#include "analyze/prefix_sharing.h"

namespace warmroute::analyze {

// prefix_groups.dat: a header comment, then per group of `sharing.all_groups`, in order,
// "rank requests reuse_distance_s".
std::string PrefixGroupsData(const SharingStats& sharing);

// hygiene.dat: a header comment, then per finding, in order, "kind hit_rate_now_% hit_rate_fixed_%
// requests".
std::string HygieneData(const std::vector<HygieneFinding>& findings);

// Writes prefix_groups.png, hygiene.png and (with report.sizing) sizing.png, with their data and
// scripts, into `dir` (created if missing). Internal error when a file cannot be written;
// FailedPrecondition when gnuplot is missing or fails (the data and scripts are left in place).
absl::Status WriteAnalysisPlots(const std::string& dir, const AnalysisReport& report);

}  // namespace warmroute::analyze
