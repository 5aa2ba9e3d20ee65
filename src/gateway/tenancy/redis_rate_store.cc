#include "gateway/tenancy/redis_rate_store.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cmath>
#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "gateway/tenancy/reconnect_backoff.h"
#include "net/detached.h"
#include "net/redis/redis_script.h"

namespace warmroute::gateway {
namespace {

namespace asio = boost::asio;
using net::RespValue;
using Timer =
    asio::basic_waitable_timer<std::chrono::steady_clock,
                               asio::wait_traits<std::chrono::steady_clock>, net::Executor>;

constexpr auto kTask = asio::as_tuple(asio::use_awaitable_t<net::Executor>{});

// The whole check-and-take, atomic on the server (docs/rate-limits.md).
//   KEYS[1], KEYS[2]: the request and prompt-token buckets, hashes {tokens, at (µs, server
//   time)}. ARGV[3i-2], ARGV[3i-1], ARGV[3i]: rate per second, burst and cost of bucket i; a
//   rate <= 0 leaves that bucket unlimited (its key is not touched).
// Returns {allowed 1|0, retry_after_ms (at most kMaxRetryAfter, 2^53), refusing bucket 0|1|2}.
// A refusal writes nothing: the refill is computed from `at` whenever the bucket is next read.
// Redis before 7 only replicates a script that reads TIME and then writes by its effects when
// asked to (replicate_commands); from 7 on that is the only mode and the call is a no-op.
constexpr std::string_view kTakeScript = R"lua(
if redis.replicate_commands then pcall(redis.replicate_commands) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local level, rate, burst, cost = {}, {}, {}, {}
local wait, refused = 0, 0
for i = 1, 2 do
  rate[i] = tonumber(ARGV[3 * i - 2])
  if rate[i] > 0 then
    burst[i] = tonumber(ARGV[3 * i - 1])
    cost[i] = math.min(tonumber(ARGV[3 * i]), burst[i])
    local s = redis.call('HMGET', KEYS[i], 'tokens', 'at')
    local tokens, at = tonumber(s[1]), tonumber(s[2])
    if tokens == nil or at == nil then
      tokens = burst[i]
    else
      tokens = math.min(burst[i], tokens + math.max(0, now - at) * rate[i] / 1e6)
    end
    level[i] = tokens
    if tokens < cost[i] then
      local w = (cost[i] - tokens) * 1e6 / rate[i]
      if w > wait then wait, refused = w, i end
    end
  end
end
if refused > 0 then return {0, math.min(math.ceil(wait / 1000), 2 ^ 53), refused} end
for i = 1, 2 do
  if level[i] ~= nil then
    redis.call('HSET', KEYS[i], 'tokens', string.format('%.17g', level[i] - cost[i]),
               'at', string.format('%.17g', now))
    local ttl = math.min(math.ceil(burst[i] * 1000 / rate[i]) + 1000, 1e15)
    redis.call('PEXPIRE', KEYS[i], string.format('%d', ttl))
  end
end
return {1, 0, 0}
)lua";

// Shortest text that reads back as the same double.
std::string Number(double value) { return fmt::format("{}", value); }

// A connect in progress: Takes that need the connection wait on `signal`, which the connect
// cancels when it ends (or which expires as a safety net).
struct ConnectAttempt {
  explicit ConnectAttempt(net::Executor executor) : signal(executor) {}
  Timer signal;
  bool done = false;
};

}  // namespace

struct RedisRateStore::State {
  State(net::Executor executor, RedisRateStoreOptions options, const Clock& clock)
      : executor(executor),
        options(std::move(options)),
        clock(clock),
        backoff(this->options.backoff_initial, this->options.backoff_max),
        script(std::string(kTakeScript)),
        where(absl::StrCat(this->options.endpoint.host, ":", this->options.endpoint.port)) {}

  // Redis is unavailable: drop the connection, start (or lengthen) the back-off, log.
  void RecordFailure(const absl::Status& status) {
    connection.reset();
    last_error = std::string(status.message());
    ++failures;
    const bool was_healthy = backoff.consecutive_failures() == 0;
    backoff.RecordFailure(clock.Now());
    const auto retry_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(backoff.current_delay()).count();
    if (was_healthy) {
      spdlog::warn(
          "rate limits: redis at {} is unavailable ({}); using local limits, next attempt in {} "
          "ms",
          where, std::string(status.message()), retry_ms);
    } else {
      spdlog::info("rate limits: redis at {} still unavailable ({}); next attempt in {} ms", where,
                   std::string(status.message()), retry_ms);
    }
  }

  // A connection is not yet a Redis that works: a stopped (SIGSTOP) or overloaded one still
  // accepts connections in the kernel's backlog. The back-off ends with its first good answer.
  void RecordConnected(std::shared_ptr<net::RedisConnection> c) { connection = std::move(c); }

  void RecordAnswered() {
    if (backoff.consecutive_failures() == 0) return;
    spdlog::info("rate limits: redis at {} answers again; limits are cluster-wide", where);
    backoff.RecordSuccess();
  }

  absl::Status BackoffError() const {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(backoff.Remaining(clock.Now()));
    return absl::UnavailableError(absl::StrCat("redis is unavailable (", last_error,
                                               "); next attempt in ", left.count(), " ms"));
  }

  net::Executor executor;
  RedisRateStoreOptions options;
  const Clock& clock;
  ReconnectBackoff backoff;
  net::RedisScript script;
  std::string where;
  std::shared_ptr<net::RedisConnection> connection;  // null when not connected
  std::shared_ptr<ConnectAttempt> connecting;        // non-null while connecting
  std::string last_error;                            // the cause of the last failure
  int64_t failures = 0;
  bool destroyed = false;
};

namespace {

using State = RedisRateStore::State;

// Connects in the background (a Take that is cancelled must not abandon a connect that other
// Takes wait for) and wakes the waiters.
net::Task<void> ConnectInBackground(std::shared_ptr<State> s,
                                    std::shared_ptr<ConnectAttempt> attempt) {
  absl::StatusOr<std::unique_ptr<net::RedisConnection>> c = co_await net::RedisConnection::Connect(
      s->executor, s->options.endpoint, s->options.connect_timeout);
  if (!s->destroyed) {
    if (c.ok()) {
      s->RecordConnected(std::shared_ptr<net::RedisConnection>(std::move(*c)));
    } else {
      s->RecordFailure(c.status());
    }
  }
  attempt->done = true;
  attempt->signal.cancel();
  if (s->connecting == attempt) s->connecting.reset();
}

// A usable connection, connecting first if needed; Unavailable at once during a back-off.
net::Task<absl::StatusOr<std::shared_ptr<net::RedisConnection>>> AcquireConnection(
    std::shared_ptr<State> s) {
  if (s->connection != nullptr) {
    absl::Status broken = s->connection->status();
    if (broken.ok()) co_return s->connection;
    s->RecordFailure(broken);  // broke since its last use (e.g. Redis closed it)
    co_return s->BackoffError();
  }
  if (!s->backoff.MayAttempt(s->clock.Now())) co_return s->BackoffError();
  std::shared_ptr<ConnectAttempt> attempt = s->connecting;
  if (attempt == nullptr) {
    attempt = std::make_shared<ConnectAttempt>(s->executor);
    // A safety net only: the connect ends by its own deadline and cancels the signal.
    attempt->signal.expires_after(s->options.connect_timeout * 2 + std::chrono::milliseconds(50));
    s->connecting = attempt;
    asio::co_spawn(s->executor, ConnectInBackground(s, attempt), [](std::exception_ptr e) {
      net::LogIfDetachedFailed("redis rate store connect", e);
    });
  }
  if (!attempt->done) co_await attempt->signal.async_wait(kTask);
  if (s->connection != nullptr && s->connection->status().ok()) co_return s->connection;
  if (!attempt->done) {
    if (attempt->signal.expiry() <= Timer::clock_type::now()) {
      co_return absl::UnavailableError(
          absl::StrCat("connecting to redis at ", s->where, " is taking too long"));
    }
    co_return absl::CancelledError("waiting for the redis connection was cancelled");
  }
  co_return s->BackoffError();
}

}  // namespace

namespace internal {

std::vector<std::string> TakeKeys(std::string_view key_prefix, std::string_view tenant) {
  return {absl::StrCat(AbslView(key_prefix), "{", AbslView(tenant), "}:req"),
          absl::StrCat(AbslView(key_prefix), "{", AbslView(tenant), "}:tok")};
}

std::vector<std::string> TakeArgs(const TenantLimits& limits, double prompt_tokens) {
  std::vector<std::string> args;
  args.reserve(6);
  const auto add = [&](const std::optional<BucketLimit>& bucket, double cost) {
    if (bucket.has_value()) {
      args.push_back(Number(bucket->rate_per_s));
      args.push_back(Number(bucket->burst));
      args.push_back(Number(std::max(0.0, cost)));
    } else {
      args.insert(args.end(), {"0", "0", "0"});
    }
  };
  add(limits.requests, 1);
  add(limits.prompt_tokens, prompt_tokens);
  return args;
}

absl::StatusOr<LimitDecision> DecodeTakeReply(const RespValue& reply) {
  const auto bad = [&] {
    return absl::InternalError(
        absl::StrCat("unexpected reply from the rate-limit script: ", net::DescribeResp(reply)));
  };
  if (reply.kind != RespValue::Kind::kArray || reply.elements.size() != 3) return bad();
  for (const RespValue& e : reply.elements) {
    if (e.kind != RespValue::Kind::kInteger) return bad();
  }
  const int64_t allowed = reply.elements[0].integer;
  const int64_t retry_ms = reply.elements[1].integer;
  const int64_t bucket = reply.elements[2].integer;
  LimitDecision decision;
  if (allowed == 1 && bucket == 0) return decision;
  if (allowed != 0 || retry_ms < 0 || bucket < 1 || bucket > 2) return bad();
  decision.allowed = false;
  decision.retry_after = std::chrono::milliseconds(retry_ms);
  decision.limit = std::string(bucket == 1 ? kRequestsLimit : kPromptTokensLimit);
  return decision;
}

absl::Status ValidateBuckets(const TenantLimits& limits) {
  const auto check = [](const std::optional<BucketLimit>& bucket, std::string_view name) {
    if (!bucket.has_value()) return absl::OkStatus();
    if (!std::isfinite(bucket->rate_per_s) || bucket->rate_per_s <= 0 ||
        !std::isfinite(bucket->burst) || bucket->burst < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bad ", AbslView(name), " limit: rate_per_s must be > 0 and burst >= 1 (got ",
          bucket->rate_per_s, ", ", bucket->burst, ")"));
    }
    return absl::OkStatus();
  };
  absl::Status status = check(limits.requests, kRequestsLimit);
  if (!status.ok()) return status;
  return check(limits.prompt_tokens, kPromptTokensLimit);
}

}  // namespace internal

RedisRateStore::RedisRateStore(net::Executor executor, RedisRateStoreOptions options,
                               const Clock& clock)
    : state_(std::make_shared<State>(executor, std::move(options), clock)) {}

RedisRateStore::~RedisRateStore() {
  state_->destroyed = true;
  // Takes in flight hold the connection too: closing it completes them (Cancelled) now.
  if (state_->connection != nullptr) state_->connection->Close();
  state_->connection.reset();
}

bool RedisRateStore::connected() const {
  return state_->connection != nullptr && state_->connection->status().ok();
}

int64_t RedisRateStore::failures() const { return state_->failures; }

int64_t RedisRateStore::script_reloads() const { return state_->script.reloads(); }

net::Task<absl::StatusOr<LimitDecision>> RedisRateStore::Take(std::string_view tenant,
                                                              const TenantLimits& limits,
                                                              double prompt_tokens) {
  const std::shared_ptr<State> s = state_;  // the store may be destroyed while we wait
  absl::Status valid = internal::ValidateBuckets(limits);
  if (!valid.ok()) co_return valid;
  if (std::isnan(prompt_tokens) || std::isinf(prompt_tokens)) {
    co_return absl::InvalidArgumentError("prompt_tokens must be finite");
  }
  if (!limits.requests.has_value() && !limits.prompt_tokens.has_value()) {
    co_return LimitDecision{};
  }
  const std::vector<std::string> keys = internal::TakeKeys(s->options.key_prefix, tenant);
  const std::vector<std::string> args = internal::TakeArgs(limits, prompt_tokens);

  absl::StatusOr<std::shared_ptr<net::RedisConnection>> connection = co_await AcquireConnection(s);
  if (!connection.ok()) co_return connection.status();
  const std::shared_ptr<net::RedisConnection> c = std::move(*connection);

  std::vector<std::string_view> key_views(keys.begin(), keys.end());
  std::vector<std::string_view> arg_views(args.begin(), args.end());
  absl::StatusOr<RespValue> reply = co_await s->script.Run(
      *c, std::move(key_views), std::move(arg_views), s->options.command_timeout);
  if (absl::IsCancelled(reply.status())) co_return reply.status();
  absl::StatusOr<LimitDecision> decision = reply.ok()
                                               ? internal::DecodeTakeReply(*reply)
                                               : absl::StatusOr<LimitDecision>(reply.status());
  if (decision.ok()) {
    if (!s->destroyed) s->RecordAnswered();
    co_return decision;
  }
  // Any failure here means the cluster-wide limits cannot be trusted right now: back off.
  if (!s->destroyed && s->connection == c) s->RecordFailure(decision.status());
  co_return absl::UnavailableError(decision.status().message());
}

}  // namespace warmroute::gateway
