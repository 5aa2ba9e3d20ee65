#include "analyze/analysis_plots.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyze/sizing.h"
#include "common/gnuplot.h"

namespace warmroute::analyze {
namespace {

// An `axis` ("x" or "y") for values in [lo, hi] (both > 0), its range a quarter wider on each
// side: no point sits on the frame, and a single value still gets a range (gnuplot warns on an
// empty one). Logarithmic with tics at 1, 2 and 5 times the powers of 10 over up to three
// decades, at the powers of 10 beyond (more labels would crowd the panel); linear under a factor
// of 10, where a log axis would show one label or none.
std::string Axis(const std::string& axis, double lo, double hi) {
  const double from = lo / 1.25, to = hi * 1.25;
  std::string out = absl::StrFormat("set %srange [%.6g:%.6g]\n", axis, from, to);
  if (hi < 10 * lo) {
    return absl::StrCat(out, "unset logscale ", axis, "\nset ", axis, "tics autofreq\n");
  }
  absl::StrAppend(&out, "set logscale ", axis, "\nset ", axis, "tics");
  if (hi > 1000 * lo) return out + " autofreq\n";
  std::string tics;
  for (int exp = static_cast<int>(std::floor(std::log10(from)));
       exp <= static_cast<int>(std::ceil(std::log10(to))); ++exp) {
    for (const double m : {1, 2, 5}) {
      const double v = m * std::pow(10.0, exp);
      if (v >= from && v <= to) absl::StrAppendFormat(&tics, "%s%g", tics.empty() ? "" : ", ", v);
    }
  }
  return absl::StrCat(out, " (", tics, ")\n");
}

// A panel with `note` in its middle and no data (gnuplot fails on a plot without a valid point).
std::string EmptyPanel(const std::string& note) {
  return absl::StrCat("unset logscale\nunset xtics\nunset ytics\nset label 1 ",
                      gnuplot::Quote(note),
                      " at graph 0.5,0.5 center\nplot [0:1][0:1] NaN notitle\n"
                      "unset label 1\nset xtics autofreq\nset ytics autofreq\n");
}

std::string PrefixGroupsScript(const SharingStats& s) {
  int64_t grouped = 0;
  int64_t zero_distance = 0;
  double min_requests = std::numeric_limits<double>::infinity(), max_requests = 0;
  double min_distance = std::numeric_limits<double>::infinity(), max_distance = 0;
  for (const GroupReuse& g : s.all_groups) {
    grouped += g.requests;
    min_requests = std::min(min_requests, static_cast<double>(g.requests));
    max_requests = std::max(max_requests, static_cast<double>(g.requests));
    if (g.reuse_distance_s > 0) {
      min_distance = std::min(min_distance, g.reuse_distance_s);
      max_distance = std::max(max_distance, g.reuse_distance_s);
    } else {
      ++zero_distance;
    }
  }
  std::string script = absl::StrCat(
      gnuplot::Terminal("prefix_groups.png"), "set multiplot layout 1,2 title ",
      gnuplot::Quote(absl::StrFormat(
          "%d prefix groups of two or more requests hold %d of the %d requests (%.1f%%)",
          s.all_groups.size(), grouped, s.requests,
          s.requests > 0 ? 100.0 * grouped / s.requests : 0.0)),
      "\nunset key\nset title 'requests per group, by rank'\n"
      "set xlabel 'rank (1: the largest group)'\nset ylabel 'requests'\n");
  if (s.all_groups.empty()) {
    const std::string note = "no prefix group of two or more requests";
    absl::StrAppend(&script, EmptyPanel(note),
                    "set title 'median reuse distance per group'\n"
                    "set xlabel 'requests in the group'\nset ylabel 'seconds'\n",
                    EmptyPanel(note), "unset multiplot\n");
    return script;
  }
  absl::StrAppend(&script, Axis("x", 1, static_cast<double>(s.all_groups.size())),
                  Axis("y", min_requests, max_requests),
                  "plot 'prefix_groups.dat' using 1:2 with linespoints pt 7 ps 0.6 lw 2\n");
  absl::StrAppend(
      &script, "set title ",
      gnuplot::Quote(absl::StrCat(
          "median reuse distance per group",
          zero_distance > 0 ? absl::StrCat(" (", zero_distance, " at 0 s not shown)") : "")),
      "\nset xlabel 'requests in the group'\n"
      "set ylabel 'median seconds between its requests'\n",
      Axis("x", min_requests, max_requests));
  if (zero_distance == static_cast<int64_t>(s.all_groups.size())) {
    absl::StrAppend(&script, EmptyPanel("every group's requests came at once (distance 0 s)"));
  } else {
    absl::StrAppend(&script, Axis("y", min_distance, max_distance),
                    "plot 'prefix_groups.dat' using 2:($3 > 0 ? $3 : 1/0) with points pt 7\n");
  }
  return script + "unset multiplot\n";
}

std::string HygieneScript(const AnalysisReport& r) {
  std::string script = absl::StrCat(
      gnuplot::Terminal("hygiene.png"),
      "set title 'prefix hygiene: hit rate with an unbounded cache, now and with each difference "
      "fixed'\nset ylabel 'hit rate (%)'\n");
  if (r.findings.empty()) {
    return script + "unset key\n" +
           EmptyPanel(r.set->format != "requests"
                          ? "prefix hygiene is not available for a trace (no prompt text)"
                          : "no finding: no early difference in prompts that otherwise match");
  }
  // Two bars per finding, at its index -1/6 and +1/6, their values written above them.
  return absl::StrCat(
      script,
      "set style data histogram\nset style histogram clustered gap 1\n"
      "set style fill solid 0.8 border -1\nset grid noxtics\nset xtics nomirror\nset xrange ",
      absl::StrFormat("[-0.6:%.1f]", static_cast<double>(r.findings.size()) - 0.4),
      "\nset yrange [0:105]\n"
      "plot 'hygiene.dat' using 2:xtic(sprintf('%s, %d req.', strcol(1), int(column(4)))) "
      "title 'now', \\\n     '' using 3 title 'fixed', \\\n"
      "     '' using ($0 - 1.0/6):($2 + 2.5):(sprintf('%.1f%%', $2)) with labels notitle, \\\n"
      "     '' using ($0 + 1.0/6):($3 + 2.5):(sprintf('%.1f%%', $3)) with labels notitle\n");
}

}  // namespace

std::string PrefixGroupsData(const SharingStats& s) {
  std::string out =
      "# prefix groups of two or more requests, biggest first: rank, requests, median reuse "
      "distance (s)\n";
  for (size_t i = 0; i < s.all_groups.size(); ++i) {
    absl::StrAppendFormat(&out, "%d %d %.6g\n", i + 1, s.all_groups[i].requests,
                          s.all_groups[i].reuse_distance_s);
  }
  return out;
}

std::string HygieneData(const std::vector<HygieneFinding>& findings) {
  std::string out =
      "# prefix hygiene findings: kind, unbounded-cache hit rate now (%), with the difference "
      "fixed (%), requests affected\n";
  for (const HygieneFinding& f : findings) {
    absl::StrAppendFormat(&out, "%s %.4f %.4f %d\n", f.kind, 100 * f.hit_rate_now,
                          100 * f.hit_rate_fixed, f.requests);
  }
  return out;
}

absl::Status WriteAnalysisPlots(const std::string& dir, const AnalysisReport& r) {
  if (absl::Status s = gnuplot::MakeDir(dir); !s.ok()) return s;
  const std::filesystem::path root(dir);
  for (const auto& [name, text] : {
           std::pair{"prefix_groups.dat", PrefixGroupsData(r.sharing)},
           std::pair{"prefix_groups.gp", PrefixGroupsScript(r.sharing)},
           std::pair{"hygiene.dat", HygieneData(r.findings)},
           std::pair{"hygiene.gp", HygieneScript(r)},
       }) {
    if (absl::Status s = gnuplot::WriteFile(root / name, text); !s.ok()) return s;
  }
  if (absl::Status s = gnuplot::Run(root, {"prefix_groups.gp", "hygiene.gp"}); !s.ok()) return s;
  return r.sizing ? WriteSizingPlot(dir, *r.sizing) : absl::OkStatus();
}

}  // namespace warmroute::analyze
