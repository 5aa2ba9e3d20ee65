#include "gateway/fleet/dns_discovery.h"

#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <utility>
#include <vector>

#include "net/detached.h"

namespace warmroute::gateway {
namespace {

namespace asio = boost::asio;
// How often a gateway without discovery looks whether a reload turned it on.
constexpr std::chrono::milliseconds kIdleTick{500};

// The traits a reload may change without changing the set of addresses.
bool SameTraits(const DiscoveryConfig& a, const DiscoveryConfig& b) { return a.backend == b.backend; }

bool SameResolver(const DiscoveryConfig& a, const DiscoveryConfig& b) {
  return a.resolver_host == b.resolver_host && a.resolver_port == b.resolver_port &&
         a.timeout == b.timeout;
}

}  // namespace

DnsDiscovery::DnsDiscovery(net::Executor executor, Backends& backends, GatewayMetrics& metrics,
                           const Clock& clock, const WallClock& wall_clock, DiscoveryConfig config,
                           uint64_t seed, Prewarmer* prewarmer)
    : executor_(executor),
      backends_(backends),
      prewarmer_(prewarmer),
      metrics_(metrics),
      clock_(clock),
      wall_clock_(wall_clock),
      timer_(executor),
      config_(std::move(config)),
      seed_(seed) {}

void DnsDiscovery::Start() {
  asio::co_spawn(executor_, Loop(),
                 [](std::exception_ptr e) { net::LogIfDetachedFailed("DNS discovery", e); });
}

void DnsDiscovery::Stop() {
  stopped_ = true;
  timer_.cancel();
}

bool DnsDiscovery::Owns(const std::string& name) const {
  std::lock_guard lock(mu_);
  return reconciler_.Owns(name);
}

absl::StatusOr<std::shared_ptr<const BackendTarget>> DnsDiscovery::AddConfigured(
    const BackendConfig& config) {
  std::lock_guard lock(mu_);
  const std::string address = EndpointAddress({.host = config.host, .port = config.port});
  for (const auto& [name, endpoint] : reconciler_.members()) {
    if (EndpointAddress(endpoint) != address) continue;
    if (prewarmer_ != nullptr) prewarmer_->OnLeaving(name);  // while the Router knows it
    if (backends_.Remove(name).ok()) {
      spdlog::info("discovery: removed backend {} (backend {} has its address)", name,
                   config.name);
    }
    reconciler_.Forget(name);
  }
  return backends_.Add(config, /*await_first_probe=*/true);
}

void DnsDiscovery::SetConfig(DiscoveryConfig config) {
  std::lock_guard lock(mu_);
  if (config == config_) return;
  const DiscoveryConfig previous = std::exchange(config_, std::move(config));
  if (!SameResolver(previous, config_)) resolver_.reset();
  if (!config_.enabled()) {
    RemoveAllLocked();
    return;
  }
  if (previous.enabled() && previous.dns != config_.dns) {
    // Another name: its health, and the log lines and series that say it, are its own.
    metrics_.OnDiscoveryStopped();
    reconciler_.Rename();
    last_success_unix_s_ = 0;
  }
  if (SameTraits(previous, config_)) return;
  for (const auto& [name, endpoint] : reconciler_.members()) {
    const absl::StatusOr<std::shared_ptr<const BackendTarget>> replaced =
        backends_.Replace(DiscoveredBackendConfig(config_, endpoint.host, endpoint.port, name));
    if (replaced.ok()) {
      spdlog::info("discovery: replaced backend {} (its discovery settings changed)", name);
    } else {
      spdlog::warn("discovery: backend {}: {}", name, std::string(replaced.status().message()));
    }
  }
}

void DnsDiscovery::RemoveAllLocked() {
  const DiscoveryChanges changes = reconciler_.Stop();
  for (const std::string& name : changes.remove) {
    if (prewarmer_ != nullptr) prewarmer_->OnLeaving(name);  // while the Router knows it
    if (backends_.Remove(name).ok()) {
      spdlog::info("discovery: removed backend {} (discovery is off)", name);
    }
  }
  metrics_.OnDiscoveryStopped();
  last_success_unix_s_ = 0;
  drained_by_hand_.clear();
}

std::chrono::milliseconds DnsDiscovery::NextWait() const {
  std::lock_guard lock(mu_);
  return config_.enabled() ? config_.interval : kIdleTick;
}

net::Task<void> DnsDiscovery::Loop() {
  while (!stopped_) {
    co_await ResolveOnce();
    if (stopped_) break;
    timer_.expires_after(NextWait());
    co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable_t<net::Executor>{}));
  }
}

absl::StatusOr<std::shared_ptr<net::dns::DnsResolver>> DnsDiscovery::ResolverLocked() {
  if (resolver_ != nullptr) return resolver_;
  absl::StatusOr<net::dns::DnsServer> server =
      net::dns::DnsServer{.host = config_.resolver_host, .port = config_.resolver_port};
  if (config_.resolver_host.empty()) server = net::dns::SystemDnsServer();
  if (!server.ok()) return server.status();
  resolver_ = std::make_shared<net::dns::DnsResolver>(executor_, *server, config_.timeout, seed_++);
  spdlog::info("discovery: resolving {} every {} ms with the DNS server {}:{}", config_.dns,
               config_.interval.count(), server->host, server->port);
  return resolver_;
}

// Kept small (GCC 12 warns of a mismatched delete on large coroutine frames): the work before
// and after the wait is in ordinary functions.
net::Task<void> DnsDiscovery::ResolveOnce() {
  std::shared_ptr<const DiscoveryConfig> config;
  absl::StatusOr<std::shared_ptr<net::dns::DnsResolver>> resolver;
  {
    std::lock_guard lock(mu_);
    if (!config_.enabled()) co_return;
    config = std::make_shared<const DiscoveryConfig>(config_);
    resolver = ResolverLocked();
  }
  absl::StatusOr<std::vector<net::dns::ServiceEndpoint>> resolved =
      std::vector<net::dns::ServiceEndpoint>{};
  if (!resolver.ok()) resolved = resolver.status();
  if (resolver.ok()) resolved = co_await (*resolver)->ResolveService(config->name, config->port);
  OnResolved(*config, std::move(resolved));
}

void DnsDiscovery::OnResolved(const DiscoveryConfig& config,
                              absl::StatusOr<std::vector<net::dns::ServiceEndpoint>> resolved) {
  std::lock_guard lock(mu_);
  // A reload while the queries ran: this outcome is for a config that no longer holds.
  if (stopped_ || !(config_ == config)) return;
  absl::StatusOr<std::vector<DiscoveredEndpoint>> outcome = std::vector<DiscoveredEndpoint>{};
  if (!resolved.ok()) outcome = resolved.status();
  if (resolved.ok()) {
    std::vector<DiscoveredEndpoint> endpoints;
    for (net::dns::ServiceEndpoint& e : *resolved) {
      endpoints.push_back({.host = std::move(e.host), .port = e.port});
    }
    outcome = std::move(endpoints);
  }
  std::set<std::string> taken;
  std::set<std::string> present;
  for (const std::shared_ptr<const BackendTarget>& t : backends_.Targets()) {
    present.insert(t->name);
    if (!reconciler_.Owns(t->name)) {
      taken.insert(EndpointAddress({.host = t->host, .port = t->port}));
    }
  }
  for (const auto& [name, endpoint] : reconciler_.members()) {
    if (!present.contains(name)) reconciler_.Forget(name);  // deleted through the admin API
  }
  const DiscoveryChanges changes = reconciler_.OnResolved(clock_.Now(), outcome, taken);
  ApplyLocked(changes, config);
  if (outcome.ok() && !outcome->empty()) {
    last_success_unix_s_ =
        std::chrono::duration<double>(wall_clock_.Now().time_since_epoch()).count();
  }
  metrics_.OnDiscoveryResolution({.dns = config.dns,
                                  .ok = reconciler_.healthy().value_or(false),
                                  .backends = static_cast<int64_t>(reconciler_.backends()),
                                  .last_success_unix_s = last_success_unix_s_});
}

void DnsDiscovery::ApplyLocked(const DiscoveryChanges& changes, const DiscoveryConfig& config) {
  switch (changes.transition) {
    case ResolveTransition::kNone:
      break;
    case ResolveTransition::kNowOk:
      spdlog::info("discovery: {} resolves ({} backends from it)", config.dns,
                   reconciler_.backends());
      break;
    case ResolveTransition::kNowFailing:
      spdlog::warn(
          "discovery: resolving {} failed: {}; keeping the last good set ({} backends) until it "
          "resolves again",
          config.dns, std::string(reconciler_.last_error().message()), reconciler_.backends());
      break;
  }
  for (const DiscoveredEndpoint& endpoint : changes.add) {
    const std::string name = DiscoveredBackendName(endpoint);
    auto added = backends_.Add(DiscoveredBackendConfig(config, endpoint.host, endpoint.port, name),
                               /*await_first_probe=*/true);
    if (added.ok()) {
      spdlog::info("discovery: added backend {} ({}); it takes requests after its first probe",
                   name, (*added)->url);
      if (prewarmer_ != nullptr) prewarmer_->OnJoined(name);
    } else {
      reconciler_.Forget(name);
      spdlog::warn("discovery: cannot add backend {}: {}", name,
                   std::string(added.status().message()));
    }
  }
  for (const std::string& name : changes.undrain) {
    if (drained_by_hand_.erase(name) > 0) {
      spdlog::info("discovery: backend {} is listed again; it stays drained (drained by hand)",
                   name);
    } else if (backends_.SetDraining(name, false).ok()) {
      spdlog::info("discovery: backend {} is listed again: undrained", name);
    }
  }
  for (const std::string& name : changes.drain) {
    if (backends_.Draining(name).value_or(false)) {
      drained_by_hand_.insert(name);
      spdlog::info("discovery: backend {} is no longer listed (drained already; removed if still "
                   "absent at the next resolution)",
                   name);
    } else if (backends_.SetDraining(name, true).ok()) {
      if (prewarmer_ != nullptr) prewarmer_->OnLeaving(name);  // a drain precedes its removal
      spdlog::info("discovery: backend {} is no longer listed: draining (removed if still absent "
                   "at the next resolution)",
                   name);
    }
  }
  for (const std::string& name : changes.remove) {
    if (backends_.Remove(name).ok()) spdlog::info("discovery: removed backend {}", name);
  }
  std::erase_if(drained_by_hand_, [&](const std::string& name) { return !reconciler_.Owns(name); });
}

}  // namespace warmroute::gateway
