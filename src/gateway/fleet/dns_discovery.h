// DNS discovery's I/O loop (docs/discovery.md): on the gateway's control io_context, resolves
// `discovery.dns` every interval_ms with net/dns/dns_resolver.h, hands each outcome to the
// DiscoveryReconciler (discovery_reconciler.h, which decides) and applies its changes to
// Backends the way the admin API does: Add with await_first_probe (the poller's first good
// probe admits it), SetDraining, Remove (in-flight requests finish). It logs each change, the
// resolution's ok/failing transitions once each, and feeds the discovery series of /metrics.
//
// The DNS server is discovery.resolver, else the first nameserver of /etc/resolv.conf, read
// when discovery starts or its config changes.
//
// A reload (SetConfig): a new name, port, interval, timeout or resolver applies from the next
// resolution (addresses no longer listed are drained and removed as usual); new backend traits
// (kind, models, pool, ...) replace every discovered backend in one step each; discovery turned
// off removes every discovered backend.
//
// Thread-safety: Start, Stop and SetConfig on the executor's thread (or before it runs); Owns
// from any thread.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "common/clock.h"
#include "common/wall_clock.h"
#include "gateway/config/discovery_config.h"
#include "gateway/fleet/backends.h"
#include "gateway/fleet/discovery_reconciler.h"
#include "gateway/observability/gateway_metrics.h"
#include "net/dns/dns_resolver.h"
#include "net/task.h"

namespace warmroute::gateway {

class DnsDiscovery {
 public:
  DnsDiscovery(net::Executor executor, Backends& backends, GatewayMetrics& metrics,
               const Clock& clock, const WallClock& wall_clock, DiscoveryConfig config,
               uint64_t seed);
  DnsDiscovery(const DnsDiscovery&) = delete;
  DnsDiscovery& operator=(const DnsDiscovery&) = delete;

  void Start();
  void Stop();
  void SetConfig(DiscoveryConfig config);

  // Whether backend `name` was added by discovery (and not removed since).
  bool Owns(const std::string& name) const;

 private:
  net::Task<void> Loop();
  net::Task<void> ResolveOnce();
  // Makes resolver_ for config_ if there is none (the server from /etc/resolv.conf when the
  // config names none).
  absl::Status EnsureResolver();
  // One resolution's result, for `config` (dropped when the config changed meanwhile).
  void OnResolved(const DiscoveryConfig& config,
                  absl::StatusOr<std::vector<net::dns::ServiceEndpoint>> resolved);
  void Apply(const DiscoveryChanges& changes, const DiscoveryConfig& config);
  void Publish();  // owned_ from the reconciler
  // Removes every discovered backend (discovery turned off).
  void RemoveAll();

  net::Executor executor_;
  Backends& backends_;
  GatewayMetrics& metrics_;
  const Clock& clock_;
  const WallClock& wall_clock_;
  DiscoveryConfig config_;
  uint64_t seed_;
  bool stopped_ = false;
  DiscoveryReconciler reconciler_;
  std::unique_ptr<net::dns::DnsResolver> resolver_;  // for config_; null: to be made
  double last_success_unix_s_ = 0;
  mutable std::mutex owned_mu_;
  std::set<std::string> owned_;  // the reconciler's names, for Owns() from other threads
};

}  // namespace warmroute::gateway
