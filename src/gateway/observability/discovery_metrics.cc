#include "gateway/observability/discovery_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace warmroute::gateway {

DiscoveryMetrics::DiscoveryMetrics(prometheus::Registry& registry)
    : resolutions_(prometheus::BuildCounter()
                       .Name("warmroute_discovery_resolutions_total")
                       .Help("DNS discovery resolutions finished, failed or not")
                       .Register(registry)),
      failures_(prometheus::BuildCounter()
                    .Name("warmroute_discovery_resolve_failures_total")
                    .Help("DNS discovery resolutions that failed (the last good set was kept)")
                    .Register(registry)),
      healthy_(prometheus::BuildGauge()
                   .Name("warmroute_discovery_healthy")
                   .Help("1 while the last DNS discovery resolution succeeded")
                   .Register(registry)),
      last_success_(prometheus::BuildGauge()
                        .Name("warmroute_discovery_last_success_timestamp_seconds")
                        .Help("Unix time of the last successful DNS discovery resolution")
                        .Register(registry)),
      backends_(prometheus::BuildGauge()
                    .Name("warmroute_discovery_backends")
                    .Help("Backends present from DNS discovery, draining ones included")
                    .Register(registry)) {}

void DiscoveryMetrics::OnResolution(const DiscoveryResolution& r) {
  std::lock_guard lock(mu_);
  if (dns_ != r.dns) ClearLocked();
  dns_ = r.dns;
  const prometheus::Labels labels = {{"dns", r.dns}};
  resolutions_.Add(labels).Increment();
  prometheus::Counter& failures = failures_.Add(labels);  // present from the first resolution
  if (!r.ok) failures.Increment();
  healthy_.Add(labels).Set(r.ok ? 1 : 0);
  last_success_.Add(labels).Set(r.last_success_unix_s);
  backends_.Add(labels).Set(static_cast<double>(r.backends));
}

void DiscoveryMetrics::Clear() {
  std::lock_guard lock(mu_);
  ClearLocked();
}

void DiscoveryMetrics::ClearLocked() {
  if (dns_.empty()) return;
  const prometheus::Labels labels = {{"dns", dns_}};
  resolutions_.Remove(&resolutions_.Add(labels));
  failures_.Remove(&failures_.Add(labels));
  healthy_.Remove(&healthy_.Add(labels));
  last_success_.Remove(&last_success_.Add(labels));
  backends_.Remove(&backends_.Add(labels));
  dns_.clear();
}

}  // namespace warmroute::gateway
