// The hit-rate dip a membership change causes, and the time the fleet takes to recover from it,
// read off a run's windowed hit-rate series (run_result.h: HitRateSeries, windows aligned so that
// the change falls on a window boundary).
//
// Definitions, with h(k) the hit rate of window k (Σ cached / Σ prompt tokens of the requests
// that arrived in it; windows without requests are skipped everywhere) and C the change time:
//   before      Σ cached / Σ prompt tokens over the whole windows in [C - baseline_s, C): the
//               steady state just before the change. before_min: the lowest h(k) among those
//               windows — the window-to-window noise a reader should hold the dip against.
//   dip         the lowest h(k) over the windows starting at or after C, up to the end of the
//               run; dip_pp = 100 x (before - dip), in percentage points (negative when no window
//               after the change falls below `before`); dip_at_s = start of that window - C.
//   recovery_s  the start, relative to C, of the first window k >= C such that k and the next
//               hold_windows - 1 non-empty windows all have h >= before - tolerance_pp / 100: the
//               first moment from which the hit rate is back within tolerance and stays there for
//               hold_windows windows. 0 when the windows right after the change never left the
//               band; nullopt when the run ends first (not recovered within the run).
//   after       Σ cached / Σ prompt tokens over the last baseline_s seconds of whole windows: the
//               new steady state, which may differ from `before` (a fleet of 7 holds less than 8).
//   first_minute  Σ cached / Σ prompt tokens over the windows starting in [C, C + after_s): what
//               the clients see in the minute after the change; first_minute_drop_pp = 100 x
//               (before - first_minute). Unlike `dip` (one window, the lowest anywhere after C)
//               it is not the extreme of many noisy windows, so it compares runs with and without
//               prewarm (docs/prewarm.md).
//   settle_s    as recovery_s, but against `after` instead of `before`: how long the fleet takes
//               to reach its new steady state when that is below the old one (a removal that
//               leaves the fleet too small for all its prefixes never "recovers" to `before`).
// Defaults: 60 s of baseline (12 windows of 5 s: enough requests that `before` is not noise),
// a 2 pp band and 3 windows held (15 s at 5 s windows: long enough that one lucky window does not
// count as recovered, short enough to resolve recoveries of tens of seconds).
//
// Thread-safety: pure functions.
#pragma once

#include <limits>
#include <optional>

#include "sim/run_result.h"

namespace warmroute::sim {

struct DipOptions {
  double baseline_s = 60;
  double tolerance_pp = 2;
  int hold_windows = 3;
  double after_s = 60;  // first_minute's span
};

struct DipFigures {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  double before = kNaN;
  double before_min = kNaN;
  double dip = kNaN;
  double dip_pp = kNaN;
  double dip_at_s = kNaN;
  std::optional<double> recovery_s;
  double after = kNaN;
  std::optional<double> settle_s;
  double first_minute = kNaN;
  double first_minute_drop_pp = kNaN;
  int windows_before = 0;  // non-empty windows in the baseline
  int windows_after = 0;   // non-empty windows starting at or after the change
};

// The figures above for a change at change_at_s (seconds from the start of the run) in `series`.
// Figures that have no windows to come from stay NaN (recovery_s: nullopt).
DipFigures AnalyseDip(const HitRateSeries& series, double change_at_s, const DipOptions& options);

}  // namespace warmroute::sim
