#include "net/redis/redis_script.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace warmroute::net {

absl::Status RedisErrorStatus(const RespValue& reply) {
  const std::string_view code = reply.error_code();
  const std::string message = absl::StrCat("redis replied: ", reply.text);
  for (std::string_view passing : {"BUSY", "LOADING", "READONLY", "MASTERDOWN", "TRYAGAIN",
                                   "CLUSTERDOWN", "OOM", "MOVED", "ASK", "NOREPLICAS", "MISCONF"}) {
    if (code == passing) return absl::UnavailableError(message);
  }
  return absl::InternalError(message);
}

Task<absl::StatusOr<RespValue>> RedisScript::Run(RedisConnection& connection,
                                                 std::vector<std::string_view> keys,
                                                 std::vector<std::string_view> args,
                                                 std::chrono::milliseconds timeout) {
  if (sha1_.empty()) {
    std::vector<std::string_view> load = {"SCRIPT", "LOAD", source_};
    absl::StatusOr<RespValue> loaded = co_await connection.Command(std::move(load), timeout);
    if (!loaded.ok()) co_return loaded.status();
    if (loaded->is_error()) co_return RedisErrorStatus(*loaded);
    if (loaded->kind != RespValue::Kind::kBulkString || loaded->text.size() != 40) {
      co_return absl::InternalError(
          absl::StrCat("unexpected reply to SCRIPT LOAD: ", DescribeResp(*loaded)));
    }
    sha1_ = loaded->text;
  }
  const std::string sha1 = sha1_;  // a local: another Run may load the script meanwhile
  const std::string key_count = std::to_string(keys.size());
  // EVALSHA sha numkeys keys... args...; the EVAL fallback differs in its first two words.
  std::vector<std::string_view> command = {"EVALSHA", sha1, key_count};
  command.insert(command.end(), keys.begin(), keys.end());
  command.insert(command.end(), args.begin(), args.end());
  std::vector<std::string_view> first = command;
  absl::StatusOr<RespValue> reply = co_await connection.Command(std::move(first), timeout);
  if (!reply.ok()) co_return reply.status();
  if (reply->is_error() && reply->error_code() == "NOSCRIPT") {
    ++reloads_;
    command[0] = "EVAL";
    command[1] = source_;
    reply = co_await connection.Command(std::move(command), timeout);
    if (!reply.ok()) co_return reply.status();
  }
  if (reply->is_error()) co_return RedisErrorStatus(*reply);
  co_return reply;
}

}  // namespace warmroute::net
