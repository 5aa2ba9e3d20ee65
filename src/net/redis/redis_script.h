// A Lua script run on Redis by its SHA1 (EVALSHA), loaded on demand.
//
// Redis caches scripts by SHA1; the cache is empty after a restart, a failover to a replica
// that never saw the script, or SCRIPT FLUSH. Run therefore sends EVALSHA and, on a NOSCRIPT
// error, sends the same call as EVAL (which runs the script and caches it again, so the next
// EVALSHA succeeds). The SHA1 comes from the server's SCRIPT LOAD reply on first use, so no
// hashing code is needed here.
//
// Usage:
//   RedisScript script("return redis.call('INCRBY', KEYS[1], ARGV[1])");
//   std::vector<std::string_view> keys = {key};
//   std::vector<std::string_view> args = {"5"};
//   absl::StatusOr<RespValue> reply =
//       co_await script.Run(connection, std::move(keys), std::move(args), timeout);
//
// Thread-safety: like RedisConnection, a script object belongs to one executor.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "net/redis/redis_connection.h"

namespace warmroute::net {

class RedisScript {
 public:
  explicit RedisScript(std::string source) : source_(std::move(source)) {}
  RedisScript(const RedisScript&) = delete;
  RedisScript& operator=(const RedisScript&) = delete;

  // Runs the script with `keys` and `args` and returns its reply. A Redis error reply (the
  // script raised an error, or the server is BUSY, LOADING, READONLY...) becomes a Status:
  // Unavailable for the server states that pass (BUSY, LOADING, READONLY, MASTERDOWN, TRYAGAIN,
  // OOM...), Internal for anything else. Transport errors are those of RedisConnection::Command.
  // Each command sent (at most SCRIPT LOAD, EVALSHA, EVAL) waits at most `timeout`.
  // REQUIRES: this object and the strings viewed by `keys` and `args` outlive the call.
  Task<absl::StatusOr<RespValue>> Run(RedisConnection& connection,
                                      std::vector<std::string_view> keys,
                                      std::vector<std::string_view> args,
                                      std::chrono::milliseconds timeout);

  // The SHA1 reported by the server; empty until the first successful load.
  const std::string& sha1() const { return sha1_; }
  // How many times a NOSCRIPT reply made Run fall back to EVAL.
  int64_t reloads() const { return reloads_; }

 private:
  std::string source_;
  std::string sha1_;
  int64_t reloads_ = 0;
};

// The Status for a Redis error reply (see RedisScript::Run). REQUIRES: reply.is_error().
absl::Status RedisErrorStatus(const RespValue& reply);

}  // namespace warmroute::net
