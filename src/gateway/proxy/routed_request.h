// Keeps the Router's accounting of one request right however the request ends: a request the
// Router was told about (Dispatched) and that neither finished nor failed explicitly — the
// handler was cancelled because the client went away — is failed when its RoutedRequest is
// destroyed, so that the backend's in-flight count and outstanding prefill come back down.
//
// Usage:
//   RoutedRequest routed(backends, call.id);
//   ... backends.Route(...) succeeded ...  routed.Dispatched();
//   ... the engine answered ...            routed.Finished(cached_tokens);
//
// Thread-safety: belongs to its request's handler.
#pragma once

#include <boost/asio/post.hpp>
#include <cstdint>
#include <optional>
#include <utility>

#include "gateway/fleet/backends.h"
#include "net/task.h"

namespace warmroute::gateway {

class RoutedRequest {
 public:
  RoutedRequest(Backends& backends, uint64_t id) : backends_(&backends), id_(id) {}
  RoutedRequest(RoutedRequest&& other) noexcept
      : backends_(other.backends_), id_(other.id_), active_(std::exchange(other.active_, false)) {}
  RoutedRequest& operator=(RoutedRequest&&) = delete;
  RoutedRequest(const RoutedRequest&) = delete;
  RoutedRequest& operator=(const RoutedRequest&) = delete;
  ~RoutedRequest() {
    if (active_) backends_->OnFailed(id_);
  }

  // The Router routed it: from now on it must be finished or failed.
  void Dispatched() { active_ = true; }
  // Schedules the speculative index insert of the request's prefix chain on its backend
  // (Backends::CommitInsert) on `executor`, to run as soon as the handler first waits — once the
  // request has been written upstream or is waiting to connect — so that the insert and its
  // evictions are not on the request's path. Decisions made in the microseconds between (by
  // handlers queued before it) do not see this chain yet: they predict as if it were not cached.
  void CommitInsertSoon(net::Executor executor) {
    boost::asio::post(executor, [backends = backends_, id = id_] { backends->CommitInsert(id); });
  }
  void Finished(std::optional<int64_t> cached_tokens) {
    if (active_) backends_->OnFinished(id_, cached_tokens);
    active_ = false;
  }
  void Failed() {
    if (active_) backends_->OnFailed(id_);
    active_ = false;
  }
  // The Router already failed it (Reroute found no alternate).
  void Forget() { active_ = false; }

 private:
  Backends* backends_;
  uint64_t id_;
  bool active_ = false;
};

}  // namespace warmroute::gateway
