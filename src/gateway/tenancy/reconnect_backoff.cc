#include "gateway/tenancy/reconnect_backoff.h"

#include <algorithm>
#include <cassert>

namespace warmroute::gateway {

ReconnectBackoff::ReconnectBackoff(Duration initial, Duration max)
    : initial_(initial), max_(std::max(initial, max)) {
  assert(initial > Duration::zero());
}

Duration ReconnectBackoff::Remaining(TimePoint now) const {
  return now >= next_attempt_ ? Duration::zero() : next_attempt_ - now;
}

void ReconnectBackoff::RecordFailure(TimePoint now) {
  delay_ = consecutive_failures_ == 0 ? initial_ : std::min(max_, delay_ * 2);
  ++consecutive_failures_;
  next_attempt_ = now + delay_;
}

void ReconnectBackoff::RecordSuccess() {
  consecutive_failures_ = 0;
  delay_ = Duration::zero();
  next_attempt_ = TimePoint{};
}

}  // namespace warmroute::gateway
