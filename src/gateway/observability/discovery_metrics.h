// DNS discovery's series on the gateway's /metrics (gateway/fleet/dns_discovery.h), labelled by
// the configured `discovery.dns`:
//
//   warmroute_discovery_resolutions_total{dns}           counter: resolutions finished
//   warmroute_discovery_resolve_failures_total{dns}      counter: of those, failed (timeout,
//                                                        SERVFAIL, NXDOMAIN, no address, a
//                                                        malformed or truncated answer)
//   warmroute_discovery_healthy{dns}                     gauge: 1 while the last resolution
//                                                        succeeded, else 0 (the last good set
//                                                        of backends is kept)
//   warmroute_discovery_last_success_timestamp_seconds{dns} gauge: Unix time of the last
//                                                        successful resolution (0: none yet)
//   warmroute_discovery_backends{dns}                    gauge: discovered backends present
//                                                        (draining ones included)
//
// Discovery turned off (or its name changed) by a reload: the old name's series are removed.
//
// Thread-safety: every method is thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

namespace prometheus {
class Registry;
class Counter;
class Gauge;
template <typename T>
class Family;
}  // namespace prometheus

namespace warmroute::gateway {

struct DiscoveryResolution {
  std::string dns;  // the configured discovery.dns
  bool ok = false;
  int64_t backends = 0;
  double last_success_unix_s = 0;  // 0: never
};

class DiscoveryMetrics {
 public:
  explicit DiscoveryMetrics(prometheus::Registry& registry);
  DiscoveryMetrics(const DiscoveryMetrics&) = delete;
  DiscoveryMetrics& operator=(const DiscoveryMetrics&) = delete;

  void OnResolution(const DiscoveryResolution& resolution);
  // Discovery stopped: its series go.
  void Clear();

 private:
  void ClearLocked();

  std::mutex mu_;
  prometheus::Family<prometheus::Counter>& resolutions_;
  prometheus::Family<prometheus::Counter>& failures_;
  prometheus::Family<prometheus::Gauge>& healthy_;
  prometheus::Family<prometheus::Gauge>& last_success_;
  prometheus::Family<prometheus::Gauge>& backends_;
  std::string dns_;  // the label of the present series; empty: none
};

}  // namespace warmroute::gateway
