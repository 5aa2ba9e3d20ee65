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
// Thread-safety: Start and Stop on the executor's thread (or before it runs); SetConfig, Owns
// and AddConfigured from any thread (a reload applies the section before it reconciles the
// configured backends, and adds those through AddConfigured, so that a static backend may take
// over a discovered one's address in the same reload).
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "common/clock.h"
#include "common/wall_clock.h"
#include "gateway/config/discovery_config.h"
#include "gateway/fleet/backends.h"
#include "gateway/fleet/discovery_reconciler.h"
#include "gateway/fleet/prewarmer.h"
#include "gateway/observability/gateway_metrics.h"
#include "net/dns/dns_resolver.h"
#include "net/task.h"

namespace warmroute::gateway {

class DnsDiscovery {
 public:
  // `prewarmer` (null: prewarm off) is told of each backend added (prewarm) and drained or
  // removed (handoff), as the admin API tells it.
  DnsDiscovery(net::Executor executor, Backends& backends, GatewayMetrics& metrics,
               const Clock& clock, const WallClock& wall_clock, DiscoveryConfig config,
               uint64_t seed, Prewarmer* prewarmer = nullptr);
  DnsDiscovery(const DnsDiscovery&) = delete;
  DnsDiscovery& operator=(const DnsDiscovery&) = delete;

  void Start();
  void Stop();
  void SetConfig(DiscoveryConfig config);

  // Whether backend `name` was added by discovery (and not removed since).
  bool Owns(const std::string& name) const;

  // Adds `config`, a backend of the config file, as Backends::Add(config, await_first_probe)
  // does, in the place of the discovered backend that has its address, if one has: a configured
  // backend takes the address over, and later resolutions skip it. Both under the lock, so that
  // no resolution adds the discovered backend back in between.
  absl::StatusOr<std::shared_ptr<const BackendTarget>> AddConfigured(const BackendConfig& config);

 private:
  net::Task<void> Loop();
  net::Task<void> ResolveOnce();
  // resolver_ for config_, made if there is none (the server from /etc/resolv.conf when the
  // config names none); call with mu_ held.
  absl::StatusOr<std::shared_ptr<net::dns::DnsResolver>> ResolverLocked();
  // One resolution's result, for `config` (dropped when the config changed meanwhile).
  void OnResolved(const DiscoveryConfig& config,
                  absl::StatusOr<std::vector<net::dns::ServiceEndpoint>> resolved);
  // The next wait of the loop.
  std::chrono::milliseconds NextWait() const;
  // Call with mu_ held.
  void ApplyLocked(const DiscoveryChanges& changes, const DiscoveryConfig& config);
  // Removes every discovered backend (discovery turned off); call with mu_ held.
  void RemoveAllLocked();

  net::Executor executor_;
  Backends& backends_;
  Prewarmer* const prewarmer_;
  GatewayMetrics& metrics_;
  const Clock& clock_;
  const WallClock& wall_clock_;
  bool stopped_ = false;  // executor thread only
  // The wait between resolutions (Stop cancels it; a resolution under way ends by its queries'
  // deadlines, at most 2 x timeout_ms each).
  boost::asio::basic_waitable_timer<std::chrono::steady_clock,
                                    boost::asio::wait_traits<std::chrono::steady_clock>,
                                    net::Executor>
      timer_;
  // Guards what follows. Never held across a wait; Backends' own lock is taken under it.
  mutable std::mutex mu_;
  DiscoveryConfig config_;
  uint64_t seed_;
  DiscoveryReconciler reconciler_;
  // For config_; null: to be made. Shared with a resolution in progress, which a reload does
  // not cut short (its outcome is then dropped).
  std::shared_ptr<net::dns::DnsResolver> resolver_;
  double last_success_unix_s_ = 0;
  // Discovered backends that were draining already (drained through the admin API) when their
  // address vanished: when it comes back they stay drained, as the operator left them.
  std::set<std::string> drained_by_hand_;
};

}  // namespace warmroute::gateway
