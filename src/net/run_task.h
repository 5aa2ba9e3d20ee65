// Runs one coroutine to completion on an io_context from ordinary code: for tests and
// command-line drivers, never from inside the io_context's own thread.
//
// Usage:
//   boost::asio::io_context io;
//   absl::StatusOr<Reply> reply = RunTask(io, client.Fetch(...));
//
// Other work on `io` (a connection's reader, say) runs meanwhile and may stay pending after the
// task completes: RunTask stops as soon as its own task is done.
//
// Thread-safety: call from one thread, which must not be running `io` already.
#pragma once

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdlib>
#include <exception>
#include <optional>
#include <utility>

#include "net/task.h"

namespace warmroute::net {

// Returns what `task` returns; rethrows what it throws.
template <typename T>
T RunTask(boost::asio::io_context& io, Task<T> task) {
  std::optional<T> out;
  std::exception_ptr failure;
  bool done = false;
  boost::asio::co_spawn(io, std::move(task), [&](std::exception_ptr e, T value) {
    failure = e;
    if (!e) out.emplace(std::move(value));
    done = true;
  });
  io.restart();  // run_one returns 0 for good once the context ran out of work
  while (!done && io.run_one() > 0) {
  }
  if (failure) std::rethrow_exception(failure);
  if (!out.has_value()) std::abort();  // the task was left suspended with nothing to wake it
  return std::move(*out);
}

}  // namespace warmroute::net
