// Spawned (detached) coroutines report unexpected failures here instead of dropping them.
//
// Usage:
//   asio::co_spawn(executor, ReadReplies(state),
//                  [](std::exception_ptr e) { LogIfDetachedFailed("redis reader", e); });
//
// Thread-safety: thread-safe (logs through spdlog).
#pragma once

#include <exception>
#include <string_view>

namespace warmroute::net {

// Logs the exception in `e` (if any) as the failure of `what`.
void LogIfDetachedFailed(std::string_view what, std::exception_ptr e);

}  // namespace warmroute::net
