// Tells a KV-event feed when its backend's health flapped: each time the backend is found down
// (BackendHealth::down_episodes grows: a failed probe after a good one, or an ejection) the
// engine may have restarted unseen — its new process's events could even continue the old
// sequence numbers by chance — so the feed clears the backend's slice and rebuilds it
// (BackendEventFeed::Clear). The first observation only sets the baseline.
//
// Usage:
//   HealthFlapWatch watch;
//   if (watch.Observe(down_episodes)) feed.Clear(now);
//
// Thread-safety: none; a plain value.
#pragma once

#include <cstdint>
#include <optional>

namespace warmroute::gateway {

class HealthFlapWatch {
 public:
  // True when `down_episodes` grew since the previous observation.
  bool Observe(int64_t down_episodes) {
    const bool flapped = seen_.has_value() && down_episodes > *seen_;
    seen_ = down_episodes;
    return flapped;
  }

 private:
  std::optional<int64_t> seen_;
};

}  // namespace warmroute::gateway
