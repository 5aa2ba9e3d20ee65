// One worker thread's keep-alive connection pools to the backends, one per backend address.
//
// A pool is made on first use. Making one also drops the pools of addresses no backend has any
// more (removed, or moved to another address), closing their idle connections; exchanges still
// running on such a pool keep what they need (net/http1/http_client.h) and close their
// connection when done. A backend replaced at the same address with other TLS settings gets a
// new pool. Sweep, called periodically by the pools' owner, does the same without waiting for a
// new address, and closes the idle connections the engines closed (an engine's keep-alive
// timeout: uvicorn's, under vLLM and SGLang, is 5 s), so that a fleet that shrinks or goes
// quiet leaves no descriptors in CLOSE-WAIT.
//
// Thread-safety: one per worker thread; use on that thread only.
#pragma once

#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "gateway/fleet/backends.h"
#include "net/http1/http_client.h"
#include "net/task.h"

namespace warmroute::gateway {

class UpstreamPools {
 public:
  UpstreamPools(net::Executor executor, const Backends& backends)
      : executor_(executor), backends_(backends) {}
  UpstreamPools(const UpstreamPools&) = delete;
  UpstreamPools& operator=(const UpstreamPools&) = delete;

  // The pool for `target`'s address.
  net::UpstreamPool& For(const BackendTarget& target);
  // Drops the pools of gone backends and closes the idle connections their upstream closed.
  void Sweep();

 private:
  void DropGone();

  net::Executor executor_;
  const Backends& backends_;
  absl::flat_hash_map<std::string, std::unique_ptr<net::UpstreamPool>> pools_;
};

}  // namespace warmroute::gateway
