#include "sim/hit_rate_dip.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace warmroute::sim {
namespace {

// Window boundaries are computed in floating point: a boundary within this much of C counts as C.
constexpr double kEpsilonS = 1e-6;

struct TokenSum {
  int64_t prompt = 0;
  int64_t cached = 0;
  double Rate() const {
    return prompt > 0 ? static_cast<double>(cached) / static_cast<double>(prompt)
                      : DipFigures::kNaN;
  }
};

// The start, relative to the change, of the first of hold_windows consecutive windows of `after`
// with a hit rate >= level - tolerance; nullopt if none (or no level).
std::optional<double> FirstBackWithin(const HitRateSeries& series, const std::vector<size_t>& after,
                                      double change_at_s, double level, const DipOptions& options) {
  if (std::isnan(level)) return std::nullopt;
  const double floor = level - options.tolerance_pp / 100;
  const size_t hold = static_cast<size_t>(std::max(1, options.hold_windows));
  size_t run = 0;  // consecutive windows within the band, ending at the current one
  for (size_t i = 0; i < after.size(); ++i) {
    run = series.hit_rate(after[i]) >= floor ? run + 1 : 0;
    if (run == hold) return std::max(0.0, series.start_s(after[i + 1 - hold]) - change_at_s);
  }
  return std::nullopt;
}

}  // namespace

DipFigures AnalyseDip(const HitRateSeries& series, double change_at_s, const DipOptions& options) {
  DipFigures f;
  const double w = series.window_s;
  if (!(w > 0)) return f;
  TokenSum before;
  std::vector<size_t> after;  // non-empty windows starting at or after the change, in order
  for (size_t k = 0; k < series.size(); ++k) {
    if (series.prompt_tokens[k] <= 0) continue;
    const double start = series.start_s(k);
    const double h = series.hit_rate(k);
    if (start >= change_at_s - kEpsilonS) {
      after.push_back(k);
    } else if (start >= change_at_s - options.baseline_s - kEpsilonS &&
               start + w <= change_at_s + kEpsilonS) {
      before.prompt += series.prompt_tokens[k];
      before.cached += series.cached_tokens[k];
      f.before_min = f.windows_before == 0 ? h : std::min(f.before_min, h);
      ++f.windows_before;
    }
  }
  f.before = before.Rate();
  f.windows_after = static_cast<int>(after.size());
  if (after.empty()) return f;

  size_t lowest = after.front();
  for (size_t k : after) {
    if (series.hit_rate(k) < series.hit_rate(lowest)) lowest = k;
  }
  f.dip = series.hit_rate(lowest);
  f.dip_at_s = series.start_s(lowest) - change_at_s;
  f.dip_pp = 100 * (f.before - f.dip);

  TokenSum minute;
  for (size_t k : after) {
    if (series.start_s(k) < change_at_s + options.after_s - kEpsilonS) {
      minute.prompt += series.prompt_tokens[k];
      minute.cached += series.cached_tokens[k];
    }
  }
  f.first_minute = minute.Rate();
  f.first_minute_drop_pp = 100 * (f.before - f.first_minute);

  TokenSum tail;
  const double end = series.start_s(series.size());
  for (size_t k : after) {
    if (series.start_s(k) >= end - options.baseline_s - kEpsilonS) {
      tail.prompt += series.prompt_tokens[k];
      tail.cached += series.cached_tokens[k];
    }
  }
  f.after = tail.Rate();
  f.recovery_s = FirstBackWithin(series, after, change_at_s, f.before, options);
  f.settle_s = FirstBackWithin(series, after, change_at_s, f.after, options);
  return f;
}

}  // namespace warmroute::sim
