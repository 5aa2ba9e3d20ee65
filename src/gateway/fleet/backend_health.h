// One backend's health as the gateway judges it, from two signals:
// - active probes of GET /health: a failed probe marks the backend down until a probe succeeds;
// - passive outlier ejection: `eject_after_failures` consecutive failed dispatches (connect
//   failure, reset or timeout before a response, or a 5xx) eject it for a back-off that starts at
//   `backoff_initial` and doubles with each consecutive ejection up to `backoff_max`. When the
//   back-off ends it is re-admitted on probation: one more failure ejects it again (with the
//   doubled back-off), one success clears the record and resets the back-off.
// Available() = probe up and not ejected. A backend added to a running gateway may be made to
// wait for its first successful probe (AwaitFirstProbe). Time comes from the caller (sans-I/O).
//
// Thread-safety: none; the owner (Backends) serialises access.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/clock.h"

namespace warmroute::gateway {

struct EjectionOptions {
  int eject_after_failures = 3;
  Duration backoff_initial = std::chrono::seconds(1);
  Duration backoff_max = std::chrono::seconds(30);
};

class BackendHealth {
 public:
  explicit BackendHealth(EjectionOptions options) : options_(options) {}

  void OnSuccess();
  // Returns true when this failure ejected the backend.
  bool OnFailure(TimePoint now);
  void OnProbe(bool ok) {
    if (!ok && probe_up_ && !awaiting_probe_) ++probe_downs_;
    probe_up_ = ok;
    if (ok) awaiting_probe_ = false;
  }
  // Not available until a probe succeeds (a backend added while the gateway runs: requests must
  // not find out whether it answers).
  void AwaitFirstProbe() {
    awaiting_probe_ = true;
    probe_up_ = false;
  }

  bool Available(TimePoint now) const { return probe_up_ && now >= ejected_until_; }
  bool ejected(TimePoint now) const { return now < ejected_until_; }
  TimePoint ejected_until() const { return ejected_until_; }
  int consecutive_failures() const { return failures_; }
  // No failure on record: no run of failures in progress and not on probation. OnSuccess() then
  // changes nothing (Backends skips its lock for such successes).
  bool clean() const { return failures_ == 0 && next_backoff_ == Duration(0); }
  int64_t ejections() const { return ejections_; }
  // Times it was found down: a failed probe after a good one, or an ejection. Each may hide an
  // engine restart (precise mode clears the backend's KV-event slice on each).
  int64_t down_episodes() const { return probe_downs_ + ejections_; }
  // "up", "ejected", "probe_pending" (awaiting its first probe) or "probe_failed" (for the admin
  // API and logs).
  std::string_view StateName(TimePoint now) const;

 private:
  EjectionOptions options_;
  bool probe_up_ = true;
  bool awaiting_probe_ = false;
  int failures_ = 0;
  Duration next_backoff_{0};  // 0: the next ejection uses backoff_initial
  TimePoint ejected_until_{};
  int64_t ejections_ = 0;
  int64_t probe_downs_ = 0;
};

}  // namespace warmroute::gateway
