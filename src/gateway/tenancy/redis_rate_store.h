// Cluster-wide token buckets in Redis: every gateway replica that points at the same Redis
// takes from the same per-tenant buckets (semantics in gateway/tenancy/rate_limits.h).
//
// The algorithm: one Lua script (kTakeScript in redis_rate_store.cc; docs/rate-limits.md)
// checks and updates both buckets of a tenant atomically on the server. Each bucket is a hash
// {tokens, at} refilled lazily from the time elapsed since `at`, read from the server's own
// clock (TIME), so gateways with skewed clocks agree. Keys are
//   <key_prefix>{<tenant>}:req   and   <key_prefix>{<tenant>}:tok
// (the braces are a Redis Cluster hash tag: a tenant's keys share a slot). Each key expires
// once its bucket would be full again (burst / rate, plus 1 s), so an idle tenant leaves
// nothing behind and an expired key means exactly "full bucket".
//
// Concurrency limits (TenantLimits::max_concurrent) are NOT handled here: they stay per
// gateway. A cluster-wide in-flight count needs leases that survive a gateway crash (a counter
// incremented by a gateway that then dies stays high until a TTL that must outlast the longest
// stream); LocalRateLimiter::AcquireConcurrent (gateway/tenancy/rate_limiter.h) enforces max_concurrent
// on each replica.
//
// Failure contract: when Redis is unreachable, slow or misbehaving, Take returns Unavailable
// quickly — after at most connect_timeout (no connection) or command_timeout (per command) —
// and the connection is dropped; then no connection is attempted for a back-off period
// (backoff_initial doubling to backoff_max), during which Take returns Unavailable at once
// without any I/O. The caller falls back to its local limiter on Unavailable. Transitions
// (lost, restored) are logged once each, not per request.
//
// Usage (one store per worker io_context):
//   RedisRateStore store(io.get_executor(), options, clock);
//   TenantLimits limits;  limits.requests = BucketLimit{50, 10};
//   absl::StatusOr<LimitDecision> d = co_await store.Take(tenant, limits, prompt_tokens);
//   if (absl::IsUnavailable(d.status())) ... local limiter ...;
//   else if (d.ok() && !d->allowed) ... 429, Retry-After: ceil(d->retry_after in s) ...;
//
// Thread-safety: a store belongs to its executor (one io_context thread): call Take only from
// coroutines running there. It may be destroyed while Takes are pending (they complete with
// Cancelled or Unavailable); `clock` must outlive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "gateway/tenancy/rate_limits.h"
#include "net/redis/redis_connection.h"
#include "net/redis/resp.h"
#include "net/task.h"

namespace warmroute::gateway {

struct RedisRateStoreOptions {
  net::RedisEndpoint endpoint;  // from net::ParseRedisUrl("redis://host:port")
  std::string key_prefix = "warmroute:rl:";
  std::chrono::milliseconds connect_timeout{100};
  std::chrono::milliseconds command_timeout{50};  // per Redis command
  std::chrono::milliseconds backoff_initial{1000};
  std::chrono::milliseconds backoff_max{10000};
};

class RedisRateStore {
 public:
  RedisRateStore(net::Executor executor, RedisRateStoreOptions options, const Clock& clock);
  ~RedisRateStore();
  RedisRateStore(const RedisRateStore&) = delete;
  RedisRateStore& operator=(const RedisRateStore&) = delete;

  // Checks the request and prompt-token buckets of `tenant` and, only if both allow, takes 1
  // and `prompt_tokens` (negative counts as 0) from them. max_concurrent is ignored (see above).
  // When both buckets refuse, retry_after is the longer wait (after which the request would
  // pass) and `limit` names that bucket.
  // A tenant without bucket limits is allowed without any I/O.
  // Errors: InvalidArgument (a limit with rate_per_s <= 0 or burst < 1, a non-finite number);
  // Unavailable (Redis down, slow, in back-off, or answering errors); Cancelled (the calling
  // coroutine was cancelled).
  // REQUIRES: `tenant` and `limits` stay valid until the returned task completes.
  net::Task<absl::StatusOr<LimitDecision>> Take(std::string_view tenant, const TenantLimits& limits,
                                                double prompt_tokens);

  // True while a connection to Redis is open and usable.
  bool connected() const;
  // How many times Redis was found unavailable (connect failures and broken connections).
  int64_t failures() const;
  // How many times the script had to be sent again after NOSCRIPT (restart, SCRIPT FLUSH).
  int64_t script_reloads() const;

  struct State;  // internal (redis_rate_store.cc)

 private:
  std::shared_ptr<State> state_;  // shared with a background connect that may outlive us
};

namespace internal {

// The script's KEYS for `tenant`: {requests bucket, prompt-token bucket}.
std::vector<std::string> TakeKeys(std::string_view key_prefix, std::string_view tenant);
// The script's ARGV: rate, burst and cost of each bucket ("0" rate: bucket not limited).
std::vector<std::string> TakeArgs(const TenantLimits& limits, double prompt_tokens);
// The script's reply {allowed 1|0, retry_after_ms, refusing bucket 0|1|2} as a decision.
absl::StatusOr<LimitDecision> DecodeTakeReply(const net::RespValue& reply);
// InvalidArgument unless every configured bucket has a finite rate_per_s > 0 and burst >= 1.
absl::Status ValidateBuckets(const TenantLimits& limits);

}  // namespace internal
}  // namespace warmroute::gateway
