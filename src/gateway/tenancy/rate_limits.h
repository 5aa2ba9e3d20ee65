// Per-tenant rate limits and a limiter's decision: the plain values shared by the gateway's
// local limiter (gateway/tenancy/rate_limiter.h) and the cluster-wide Redis store (gateway/tenancy/redis_rate_store.h), so that both
// apply the same semantics:
//
// A token bucket starts full (`burst` tokens) and refills continuously at `rate_per_s` up to
// `burst`. A request costing c is allowed iff the bucket holds at least c tokens, and then c are
// taken; a cost above `burst` counts as `burst` (else a prompt longer than the burst would be
// refused forever). A request is checked against every configured bucket of its tenant and
// takes from all of them only if all allow it. When refused, `retry_after` is the time until
// the refusing buckets hold enough tokens (the longest wait if several refuse), and `limit`
// names the bucket with that longest wait.
//
// Thread-safety: plain values.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace warmroute::gateway {

// Names of the limits, as reported in LimitDecision::limit.
inline constexpr std::string_view kRequestsLimit = "requests";
inline constexpr std::string_view kPromptTokensLimit = "prompt_tokens";
inline constexpr std::string_view kConcurrentLimit = "concurrent";

// The longest LimitDecision::retry_after: a longer wait (a tiny rate with a large burst) is
// reported as this one. 2^53 ms (~285,000 years) is exact in a double, so the Redis script
// (whose numbers are doubles) reports the same.
inline constexpr std::chrono::milliseconds kMaxRetryAfter{int64_t{1} << 53};

struct BucketLimit {
  double rate_per_s = 0;  // tokens added per second; > 0
  double burst = 1;       // capacity in tokens; >= 1
};

struct TenantLimits {
  std::optional<BucketLimit> requests;       // cost 1 per request
  std::optional<BucketLimit> prompt_tokens;  // cost = estimated prompt tokens
  int64_t max_concurrent = 0;                // requests in flight; 0 = unlimited

  bool any() const { return requests || prompt_tokens || max_concurrent > 0; }
};

struct LimitDecision {
  bool allowed = true;
  std::chrono::milliseconds retry_after{0};  // when refused: wait at least this long
  std::string limit;  // when refused: kRequestsLimit, kPromptTokensLimit or kConcurrentLimit
};

}  // namespace warmroute::gateway
