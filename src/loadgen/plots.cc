#include "loadgen/plots.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/gnuplot.h"
#include "core/stats/samples.h"

namespace warmroute::loadgen {
namespace {

using gnuplot::Quote;
using gnuplot::Terminal;

// Buckets of at least one second, at most ~120 of them over the run.
double BucketSeconds(const BenchRun& run) {
  double end = 0;
  for (const RequestRecord& r : run.requests) {
    if (r.send_s >= 0) end = std::max(end, r.send_s + std::max(0.0, r.e2e_s));
  }
  return std::max(1.0, end / 120);
}

struct Plot {
  std::string name;  // file stem
  std::string data;
  std::string script;
};

Plot TtftCdf(const BenchRun& run) {
  stats::Samples ttft;
  for (const RequestRecord& r : run.requests) {
    if (r.ok() && r.ttft_s >= 0) ttft.Add(r.ttft_s);
  }
  Plot p{"ttft_cdf", gnuplot::CdfData("ttft_ms", ttft.Sorted(), 1000), ""};
  p.script = absl::StrCat(Terminal("ttft_cdf.png"),
                          "set title 'TTFT CDF'\nset xlabel 'TTFT (ms)'\n"
                          "set ylabel 'fraction of requests'\nset logscale x\nset yrange [0:1]\n"
                          "plot 'ttft_cdf.dat' using 1:2 with lines lw 2 title ",
                          Quote(run.config.name.empty() ? "TTFT" : run.config.name), "\n");
  return p;
}

Plot TtftOverTime(const BenchRun& run) {
  Plot p{"ttft_over_time", "# send_s ttft_ms\n", ""};
  for (const RequestRecord& r : run.requests) {
    if (r.ok() && r.ttft_s >= 0)
      absl::StrAppendFormat(&p.data, "%.4f %.4f\n", r.send_s, 1000 * r.ttft_s);
  }
  p.script = absl::StrCat(Terminal("ttft_over_time.png"),
                          "set title 'TTFT over time'\nset xlabel 'send time (s)'\n"
                          "set ylabel 'TTFT (ms)'\nset logscale y\n"
                          "plot 'ttft_over_time.dat' using 1:2 with points pt 7 ps 0.4 "
                          "title 'request'\n");
  return p;
}

Plot HitRateOverTime(const BenchRun& run, double bucket) {
  std::map<int64_t, std::pair<double, double>> usage;  // bucket -> (cached, prompt)
  for (const RequestRecord& r : run.requests) {
    if (!r.ok() || !r.usage_reported) continue;
    auto& [cached, prompt] = usage[static_cast<int64_t>((r.send_s + r.e2e_s) / bucket)];
    cached += static_cast<double>(r.cached_tokens);
    prompt += static_cast<double>(r.prompt_tokens);
  }
  std::map<int64_t, std::pair<double, double>> engine;  // bucket -> (hits, queries)
  for (const EngineSeries& e : run.engines) {
    for (size_t i = 1; i < e.scrapes.size(); ++i) {
      auto& [hits, queries] = engine[static_cast<int64_t>(e.scrapes[i].first / bucket)];
      hits += e.scrapes[i].second.prefix_cache_hits - e.scrapes[i - 1].second.prefix_cache_hits;
      queries +=
          e.scrapes[i].second.prefix_cache_queries - e.scrapes[i - 1].second.prefix_cache_queries;
    }
  }
  Plot p{"hit_rate_over_time", "# t_s token_hit_rate_percent (responses)\n", ""};
  for (const auto& [b, v] : usage) {
    if (v.second > 0) {
      absl::StrAppendFormat(&p.data, "%.3f %.3f\n", bucket * static_cast<double>(b + 1),
                            100 * v.first / v.second);
    }
  }
  p.data += "\n\n# t_s hit_rate_percent (engine metrics)\n";
  bool any_engine = false;
  for (const auto& [b, v] : engine) {
    if (v.second > 0) {
      any_engine = true;
      absl::StrAppendFormat(&p.data, "%.3f %.3f\n", bucket * static_cast<double>(b + 1),
                            100 * v.first / v.second);
    }
  }
  p.script = absl::StrCat(Terminal("hit_rate_over_time.png"),
                          absl::StrFormat("set title 'prefix cache hit rate per %gs'\n", bucket),
                          "set xlabel 'time (s)'\nset ylabel 'hit rate (%)'\nset yrange [0:100]\n",
                          "plot 'hit_rate_over_time.dat' index 0 using 1:2 with linespoints "
                          "lw 2 title 'responses (cached/prompt tokens)'",
                          any_engine ? ", 'hit_rate_over_time.dat' index 1 using 1:2 with "
                                       "linespoints lw 2 title 'engine metrics'"
                                     : "",
                          "\n");
  return p;
}

// Requests per second per backend, from the header, else from the engines' counters; nullopt
// when neither is known.
std::optional<Plot> BackendLoad(const BenchRun& run, double bucket) {
  std::map<std::string, std::map<int64_t, double>> series;  // backend -> bucket -> requests
  for (const RequestRecord& r : run.requests) {
    if (!r.backend.empty() && r.send_s >= 0) {
      series[r.backend][static_cast<int64_t>(r.send_s / bucket)] += 1;
    }
  }
  std::string source = "x-warmroute-backend, by send time";
  if (series.empty()) {
    source = "engines' vllm:request_success_total";
    for (const EngineSeries& e : run.engines) {
      for (size_t i = 1; i < e.scrapes.size(); ++i) {
        series[e.url][static_cast<int64_t>(e.scrapes[i].first / bucket)] +=
            e.scrapes[i].second.request_success - e.scrapes[i - 1].second.request_success;
      }
    }
  }
  if (series.empty()) return std::nullopt;
  int64_t last = 0;
  for (const auto& [name, buckets] : series) last = std::max(last, buckets.rbegin()->first);
  Plot p{"backend_load", "# t_s, then requests/s per backend:", ""};
  for (const auto& [name, buckets] : series) absl::StrAppend(&p.data, " ", name);
  p.data += "\n";
  for (int64_t b = 0; b <= last; ++b) {
    absl::StrAppendFormat(&p.data, "%.3f", bucket * static_cast<double>(b + 1));
    for (const auto& [name, buckets] : series) {
      auto it = buckets.find(b);
      absl::StrAppendFormat(&p.data, " %.3f", it == buckets.end() ? 0 : it->second / bucket);
    }
    p.data += "\n";
  }
  p.script = absl::StrCat(Terminal("backend_load.png"), "set title ",
                          Quote(absl::StrCat("requests/s per backend (", source, ")")),
                          "\nset xlabel 'time (s)'\nset ylabel 'requests/s'\nplot ");
  size_t column = 2;
  for (const auto& [name, buckets] : series) {
    absl::StrAppend(&p.script, column > 2 ? ", " : "", "'backend_load.dat' using 1:", column,
                    " with lines lw 2 title ", Quote(name));
    ++column;
  }
  p.script += "\n";
  return p;
}

absl::Status Draw(const std::string& dir, const std::vector<Plot>& plots) {
  if (absl::Status s = gnuplot::MakeDir(dir); !s.ok()) return s;
  const std::filesystem::path root(dir);
  std::vector<std::string> scripts;
  for (const Plot& p : plots) {
    if (absl::Status s = gnuplot::WriteFile(root / (p.name + ".dat"), p.data); !s.ok()) return s;
    if (absl::Status s = gnuplot::WriteFile(root / (p.name + ".gp"), p.script); !s.ok()) {
      return s;
    }
    scripts.push_back(p.name + ".gp");
  }
  if (!gnuplot::Available()) {
    return absl::FailedPreconditionError(
        absl::StrCat("gnuplot is not installed (apt-get install gnuplot-nox): no PNG plots; the "
                     "data and gnuplot scripts are in ",
                     dir));
  }
  return gnuplot::Run(root, scripts);
}

}  // namespace

absl::StatusOr<std::vector<std::string>> WriteRunPlots(const std::string& dir,
                                                       const BenchRun& run) {
  const double bucket = BucketSeconds(run);
  std::vector<Plot> plots = {TtftCdf(run), TtftOverTime(run), HitRateOverTime(run, bucket)};
  if (std::optional<Plot> load = BackendLoad(run, bucket)) plots.push_back(std::move(*load));
  if (absl::Status s = Draw(dir, plots); !s.ok()) return s;
  std::vector<std::string> pngs;
  for (const Plot& p : plots) pngs.push_back(p.name + ".png");
  return pngs;
}

absl::StatusOr<std::string> WriteCompareCdf(const std::string& dir,
                                            const std::vector<SavedRun>& runs) {
  Plot p{"ttft_cdf_compare", "", ""};
  p.script = absl::StrCat(Terminal("ttft_cdf_compare.png"),
                          "set title 'TTFT CDF'\nset xlabel 'TTFT (ms)'\n"
                          "set ylabel 'fraction of requests'\nset logscale x\n"
                          "set yrange [0:1]\nplot ");
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<double> sorted = runs[i].ttft_s;
    std::sort(sorted.begin(), sorted.end());
    // An empty data block would shift gnuplot's indices: one point at the origin instead.
    p.data += sorted.empty() ? "# no TTFT\n0 0\n\n\n"
                             : gnuplot::CdfData(runs[i].name + " ttft_ms", sorted, 1000) + "\n\n";
    absl::StrAppend(&p.script, i ? ", \\\n     " : "", "'ttft_cdf_compare.dat' index ", i,
                    " using 1:2 with lines lw 2 title ", Quote(runs[i].name));
  }
  p.script += "\n";
  if (absl::Status s = Draw(dir, {p}); !s.ok()) return s;
  return (std::filesystem::path(dir) / "ttft_cdf_compare.png").string();
}

}  // namespace warmroute::loadgen
