// Per-tenant limits and the verdict of a limiter, shared by the local limiter
// (router/rate_limiter.h) and the cluster-wide Redis store (router/redis_rate_store.h), which
// implement the same token-bucket semantics:
//
// A bucket starts full (`burst` tokens) and refills continuously at `rate_per_s` up to `burst`.
// A request costing c is allowed iff the bucket holds at least min(c, burst) tokens (a cost above
// the burst is clamped, so one huge prompt is not refused forever); it then takes them. A request
// passes only if every configured bucket of its tenant allows it, and then takes from each
// (all or nothing). retry_after is the time until the refusing bucket holds enough.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace warmroute::router {

struct BucketLimit {
  double rate_per_s = 0;  // > 0
  double burst = 0;       // capacity, >= 1
};

struct TenantLimits {
  std::optional<BucketLimit> requests;       // cost 1 per request
  std::optional<BucketLimit> prompt_tokens;  // cost = the prompt's estimated tokens
  int64_t max_concurrent = 0;                // 0 = unlimited

  bool any() const { return requests || prompt_tokens || max_concurrent > 0; }
};

struct LimitDecision {
  bool allowed = true;
  std::chrono::milliseconds retry_after{0};
  std::string limit;  // when refused: "requests" | "prompt_tokens" | "concurrent"
};

}  // namespace warmroute::router
