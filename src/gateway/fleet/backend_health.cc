#include "gateway/fleet/backend_health.h"

#include <algorithm>

namespace warmroute::gateway {

void BackendHealth::OnSuccess() {
  failures_ = 0;
  next_backoff_ = Duration(0);
}

bool BackendHealth::OnFailure(TimePoint now) {
  if (now < ejected_until_) return false;  // already out: late failures of earlier dispatches
  ++failures_;
  // On probation after an ejection (next_backoff_ set) one failure is enough.
  const bool probation = next_backoff_ > Duration(0);
  if (!probation && failures_ < options_.eject_after_failures) return false;
  const Duration backoff = probation ? next_backoff_ : options_.backoff_initial;
  ejected_until_ = now + backoff;
  next_backoff_ = std::min<Duration>(backoff * 2, options_.backoff_max);
  failures_ = 0;
  ++ejections_;
  return true;
}

std::string_view BackendHealth::StateName(TimePoint now) const {
  if (awaiting_probe_) return "probe_pending";
  if (!probe_up_) return "probe_failed";
  if (ejected(now)) return "ejected";
  return "up";
}

}  // namespace warmroute::gateway
