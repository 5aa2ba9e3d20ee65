#include "loadgen/report.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace warmroute::loadgen {
namespace {

struct Row {
  std::string label;
  std::vector<std::string> values;
};

std::string Ms(double seconds, size_t count) {
  return count == 0 ? "-" : absl::StrFormat("%.1f", 1000 * seconds);
}

std::string Percent(const std::optional<double>& fraction) {
  return fraction ? absl::StrFormat("%.1f%%", 100 * *fraction) : "-";
}

std::string Errors(const Summary& s) {
  if (s.errors.empty()) return "0";
  std::vector<std::string> parts;
  for (const auto& [kind, n] : s.errors) parts.push_back(absl::StrCat(kind, "=", n));
  return absl::StrCat(s.failed, " (", absl::StrJoin(parts, ", "), ")");
}

// The summary figures of each run, as rows.
std::vector<Row> Rows(const std::vector<const Summary*>& runs) {
  std::vector<Row> rows;
  auto add = [&](std::string label, auto&& value) {
    Row row{std::move(label), {}};
    for (const Summary* s : runs) row.values.push_back(value(*s));
    rows.push_back(std::move(row));
  };
  add("requests (ok/sent/total)",
      [](const Summary& s) { return absl::StrCat(s.succeeded, "/", s.sent, "/", s.requests); });
  add("errors", [](const Summary& s) { return Errors(s); });
  add("duration (s)", [](const Summary& s) { return absl::StrFormat("%.2f", s.duration_s); });
  add("requests/s", [](const Summary& s) { return absl::StrFormat("%.2f", s.requests_per_s); });
  add("output tokens/s",
      [](const Summary& s) { return absl::StrFormat("%.1f", s.output_tokens_per_s); });
  const std::pair<const char*, Percentiles Summary::*> kTimes[] = {
      {"TTFT", &Summary::ttft_s}, {"ITL", &Summary::itl_s}, {"E2E", &Summary::e2e_s}};
  for (const auto& [name, member] : kTimes) {
    add(absl::StrCat(name, " p50 (ms)"),
        [m = member](const Summary& s) { return Ms((s.*m).p50, (s.*m).count); });
    add(absl::StrCat(name, " p90 (ms)"),
        [m = member](const Summary& s) { return Ms((s.*m).p90, (s.*m).count); });
    add(absl::StrCat(name, " p99 (ms)"),
        [m = member](const Summary& s) { return Ms((s.*m).p99, (s.*m).count); });
  }
  add("token hit rate (responses)", [](const Summary& s) { return Percent(s.token_hit_rate); });
  add("hit rate (engine metrics)", [](const Summary& s) { return Percent(s.engine_hit_rate); });
  add("load skew (max/mean)", [](const Summary& s) {
    return s.load_skew ? absl::StrFormat("%.2f (%s, %d backends)", *s.load_skew, s.backend_source,
                                         s.backends.size())
                       : std::string("-");
  });
  return rows;
}

std::string Text(const std::vector<std::string>& header, const std::vector<Row>& rows) {
  std::vector<size_t> width(header.size(), 0);
  for (size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const Row& r : rows) {
    width[0] = std::max(width[0], r.label.size());
    for (size_t c = 0; c < r.values.size(); ++c) {
      width[c + 1] = std::max(width[c + 1], r.values[c].size());
    }
  }
  std::string out;
  auto line = [&](const std::string& first, const std::vector<std::string>& rest) {
    absl::StrAppend(&out, first, std::string(width[0] - first.size(), ' '));
    for (size_t c = 0; c < rest.size(); ++c) {
      absl::StrAppend(&out, "  ", std::string(width[c + 1] - rest[c].size(), ' '), rest[c]);
    }
    out += "\n";
  };
  line(header[0], std::vector<std::string>(header.begin() + 1, header.end()));
  size_t total = width[0];
  for (size_t c = 1; c < width.size(); ++c) total += 2 + width[c];
  out += std::string(total, '-') + "\n";
  for (const Row& r : rows) line(r.label, r.values);
  return out;
}

std::string Markdown(const std::vector<std::string>& header, const std::vector<Row>& rows) {
  std::string out = absl::StrCat("| ", absl::StrJoin(header, " | "), " |\n|");
  for (size_t c = 0; c < header.size(); ++c) out += c == 0 ? " --- |" : " ---: |";
  out += "\n";
  for (const Row& r : rows) {
    absl::StrAppend(&out, "| ", r.label, " | ", absl::StrJoin(r.values, " | "), " |\n");
  }
  return out;
}

}  // namespace

std::string SummaryTable(const std::string& name, const Summary& summary) {
  return Text({"metric", name.empty() ? "value" : name}, Rows({&summary}));
}

std::string ReportMarkdown(const BenchRun& run, const Summary& summary,
                           const std::vector<std::string>& plots) {
  const BenchConfig& c = run.config;
  std::string out = absl::StrCat("# warmroute bench: ", c.name.empty() ? "run" : c.name, "\n\n");
  absl::StrAppend(&out, "- target: ", absl::StrJoin(c.urls, ", "), "\n");
  absl::StrAppend(&out, "- workload: ", c.workload, ", ", c.requests, " requests, ",
                  c.concurrency > 0 ? absl::StrCat("closed loop, concurrency ", c.concurrency)
                                    : absl::StrFormat("open loop, %g requests/s", c.rate),
                  ", seed ", c.seed, c.stream ? ", streaming" : ", not streaming",
                  c.api.empty() ? "" : absl::StrCat(", API ", c.api),
                  c.model.empty() ? "" : absl::StrCat(", model ", c.model), "\n");
  if (run.interrupted) absl::StrAppend(&out, "- **stopped early**: ", run.stop_reason, "\n");
  absl::StrAppend(&out, "\n## Summary\n\n", Markdown({"metric", "value"}, Rows({&summary})));

  if (!summary.errors.empty()) {
    std::map<std::string, std::string> example;
    for (const RequestRecord& r : run.requests) {
      if (!r.error_kind.empty() && !example.count(r.error_kind)) example[r.error_kind] = r.error;
    }
    out += "\n## Errors\n\n| kind | count | example |\n| --- | ---: | --- |\n";
    for (const auto& [kind, n] : summary.errors) {
      std::string reason = example[kind];
      std::replace(reason.begin(), reason.end(), '|', '/');
      std::replace(reason.begin(), reason.end(), '\n', ' ');
      absl::StrAppend(&out, "| ", kind, " | ", n, " | ", reason, " |\n");
    }
  }
  if (!summary.backends.empty()) {
    absl::StrAppend(&out, "\n## Backends (from ",
                    summary.backend_source == "header" ? "the x-warmroute-backend header"
                                                       : "the engines' request counters",
                    ")\n\n| backend | requests | share |\n| --- | ---: | ---: |\n");
    for (const BackendShare& b : summary.backends) {
      absl::StrAppendFormat(&out, "| %s | %g | %.1f%% |\n", b.name, b.requests, 100 * b.share);
    }
  }
  for (const EngineSeries& e : run.engines) {
    if (e.scrapes.size() < 2) {
      absl::StrAppend(&out, "\nEngine metrics of ", e.url, " unavailable",
                      e.last_error.empty() ? "" : absl::StrCat(": ", e.last_error), "\n");
    }
  }
  if (!plots.empty()) {
    out += "\n## Plots\n\n";
    for (const std::string& png : plots) absl::StrAppend(&out, "![", png, "](", png, ")\n");
  }
  return out;
}

std::string CompareTable(const std::vector<SavedRun>& runs) {
  std::vector<std::string> header = {"metric"};
  std::vector<const Summary*> summaries;
  for (const SavedRun& r : runs) {
    header.push_back(r.name);
    summaries.push_back(&r.summary);
  }
  return Text(header, Rows(summaries));
}

std::string PolicyTable(const std::vector<SavedRun>& runs, bool markdown) {
  const std::vector<std::string> header = {"policy",        "hit rate (engine)", "TTFT p50 (ms)",
                                           "TTFT p99 (ms)", "E2E p50 (ms)",      "load imbalance",
                                           "failed"};
  std::vector<Row> rows;
  for (const SavedRun& r : runs) {
    const Summary& s = r.summary;
    rows.push_back({r.name,
                    {Percent(s.engine_hit_rate), Ms(s.ttft_s.p50, s.ttft_s.count),
                     Ms(s.ttft_s.p99, s.ttft_s.count), Ms(s.e2e_s.p50, s.e2e_s.count),
                     s.load_skew ? absl::StrFormat("%.2f", *s.load_skew) : std::string("-"),
                     absl::StrCat(s.failed, "/", s.requests)}});
  }
  return markdown ? Markdown(header, rows) : Text(header, rows);
}

}  // namespace warmroute::loadgen
