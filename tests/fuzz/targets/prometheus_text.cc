// The Prometheus text parser (net/prometheus_text.h) on an engine's /metrics, as the poller
// scrapes it: a bad page is refused with a message, never a crash; every sample it returns has
// a name.
#include "fuzz_target.h"
#include "net/prometheus_text.h"

WARMROUTE_FUZZ_TARGET(prometheus_text) {
  absl::StatusOr<std::vector<warmroute::net::MetricSample>> samples =
      warmroute::net::ParsePrometheusText(warmroute::fuzz::AsText(data, size));
  if (!samples.ok()) {
    FUZZ_CHECK(!samples.status().message().empty());
    return 0;
  }
  for (const warmroute::net::MetricSample& sample : *samples) {
    FUZZ_CHECK(!sample.name.empty());
    (void)warmroute::net::FindLabel(sample, "model_name");
  }
  return 0;
}
