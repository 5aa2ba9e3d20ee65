#include "gateway/tenancy/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace warmroute::gateway {
namespace {

// The bucket's level now (refilled since its last update, clamped to the burst).
double Level(double tokens, TimePoint updated, TimePoint now,
             const BucketLimit& limit) {
  if (tokens < 0) return limit.burst;
  const double elapsed = std::max(0.0, ToSeconds(now - updated));
  return std::min(limit.burst, tokens + elapsed * limit.rate_per_s);
}

// The time until `missing` tokens are refilled, at most kMaxRetryAfter (a tiny rate with a large
// burst needs longer than int64 milliseconds can hold).
std::chrono::milliseconds WaitFor(double missing, const BucketLimit& limit) {
  const double ms = std::ceil(missing / limit.rate_per_s * 1000.0);
  if (!(ms < static_cast<double>(kMaxRetryAfter.count()))) return kMaxRetryAfter;
  return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

}  // namespace

LimitDecision LocalRateLimiter::Take(std::string_view tenant, const TenantLimits& limits,
                                     double prompt_tokens) {
  if (!limits.requests && !limits.prompt_tokens) return {};
  const TimePoint now = clock_.Now();
  std::lock_guard lock(mu_);
  State& state = tenants_[std::string(tenant)];
  LimitDecision decision;
  const auto refuse = [&decision](std::chrono::milliseconds wait, std::string_view limit) {
    if (decision.allowed || wait > decision.retry_after) {
      decision = {.allowed = false, .retry_after = wait, .limit = std::string(limit)};
    }
  };
  double request_level = 0;
  double token_level = 0;
  double token_cost = 0;
  if (limits.requests) {
    request_level = Level(state.requests.tokens, state.requests.updated, now, *limits.requests);
    if (request_level < 1) refuse(WaitFor(1 - request_level, *limits.requests), kRequestsLimit);
  }
  if (limits.prompt_tokens) {
    token_cost = std::min(std::max(prompt_tokens, 0.0), limits.prompt_tokens->burst);
    token_level = Level(state.prompt_tokens.tokens, state.prompt_tokens.updated, now,
                        *limits.prompt_tokens);
    if (token_level < token_cost) {
      refuse(WaitFor(token_cost - token_level, *limits.prompt_tokens), kPromptTokensLimit);
    }
  }
  if (!decision.allowed) return decision;
  if (limits.requests) state.requests = {.tokens = request_level - 1, .updated = now};
  if (limits.prompt_tokens) {
    state.prompt_tokens = {.tokens = token_level - token_cost, .updated = now};
  }
  return decision;
}

bool LocalRateLimiter::AcquireConcurrent(std::string_view tenant, const TenantLimits& limits) {
  std::lock_guard lock(mu_);
  State& state = tenants_[std::string(tenant)];
  if (limits.max_concurrent > 0 && state.in_flight >= limits.max_concurrent) return false;
  ++state.in_flight;
  return true;
}

void LocalRateLimiter::Release(std::string_view tenant) {
  std::lock_guard lock(mu_);
  auto it = tenants_.find(std::string(tenant));
  if (it != tenants_.end() && it->second.in_flight > 0) --it->second.in_flight;
}

int64_t LocalRateLimiter::in_flight(std::string_view tenant) const {
  std::lock_guard lock(mu_);
  auto it = tenants_.find(std::string(tenant));
  return it == tenants_.end() ? 0 : it->second.in_flight;
}

int64_t RetryAfterSeconds(std::chrono::milliseconds retry_after) {
  const int64_t ms = retry_after.count();
  return std::max<int64_t>(1, ms / 1000 + (ms % 1000 > 0 ? 1 : 0));
}

}  // namespace warmroute::gateway
