// The local per-tenant limiter: token buckets with the semantics of rate_limits.h, and a
// concurrency count. One per gateway process, shared by every worker thread; used alone when
// limits are local, and as the fallback when the cluster-wide Redis store is unreachable.
//
// A tenant's buckets are created full on first use and keep their level across config reloads
// (a changed limit applies from the next request: the level is clamped to the new burst).
//
// Usage:
//   LocalRateLimiter limiter(clock);
//   if (!limiter.AcquireConcurrent("acme", limits)) reply 429;        // then, at the end:
//   LimitDecision d = limiter.Take("acme", limits, prompt_tokens);    // limiter.Release("acme")
//   if (!d.allowed) reply 429 with Retry-After: ceil(d.retry_after);
//
// Thread-safety: thread-safe (one mutex; a decision is a few hundred nanoseconds).
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "common/clock.h"
#include "gateway/tenancy/rate_limits.h"

namespace warmroute::gateway {

class LocalRateLimiter {
 public:
  explicit LocalRateLimiter(const Clock& clock) : clock_(clock) {}
  LocalRateLimiter(const LocalRateLimiter&) = delete;
  LocalRateLimiter& operator=(const LocalRateLimiter&) = delete;

  // Checks every bucket of `tenant` in `limits` for a request of `prompt_tokens`; takes from all
  // of them only if all allow it (rate_limits.h).
  LimitDecision Take(std::string_view tenant, const TenantLimits& limits, double prompt_tokens);

  // One more request of `tenant` in flight, unless it already has limits.max_concurrent (false:
  // refused, nothing counted). Every true must be matched by one Release.
  bool AcquireConcurrent(std::string_view tenant, const TenantLimits& limits);
  void Release(std::string_view tenant);

  int64_t in_flight(std::string_view tenant) const;

 private:
  struct Bucket {
    double tokens = -1;  // < 0: never used (starts full)
    TimePoint updated{};
  };
  struct State {
    Bucket requests;
    Bucket prompt_tokens;
    int64_t in_flight = 0;
  };

  const Clock& clock_;
  mutable std::mutex mu_;
  absl::flat_hash_map<std::string, State> tenants_;
};

// Holds one of a tenant's concurrent-request slots (LocalRateLimiter::AcquireConcurrent succeeded)
// until it is destroyed. Moves transfer the slot.
class ConcurrencySlot {
 public:
  ConcurrencySlot(LocalRateLimiter& limiter, std::string tenant)
      : limiter_(&limiter), tenant_(std::move(tenant)) {}
  ConcurrencySlot(ConcurrencySlot&& other) noexcept
      : limiter_(std::exchange(other.limiter_, nullptr)), tenant_(std::move(other.tenant_)) {}
  ConcurrencySlot& operator=(ConcurrencySlot&&) = delete;
  ConcurrencySlot(const ConcurrencySlot&) = delete;
  ConcurrencySlot& operator=(const ConcurrencySlot&) = delete;
  ~ConcurrencySlot() {
    if (limiter_ != nullptr) limiter_->Release(tenant_);
  }

 private:
  LocalRateLimiter* limiter_;
  std::string tenant_;
};

// The Retry-After header value for `retry_after`: whole seconds, rounded up, at least 1.
int64_t RetryAfterSeconds(std::chrono::milliseconds retry_after);

}  // namespace warmroute::gateway
