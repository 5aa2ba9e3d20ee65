// The last 15 minutes of the gateway, for its live dashboard (GET /dashboard, dashboard_page.h):
// a ring of one sample per second of the gateway's own /metrics, from which Json() computes
// what the page draws.
//
// Each Record takes the gateway's metrics as /metrics serves them (parsed: net/prometheus_text.h)
// plus what /metrics does not say: each backend's state ("up", "ejected", "draining", ...) and
// the hottest prefixes with the backends that took them. Only the counters and gauges the page
// shows are kept, summed over the labels it does not show. So the page and Prometheus read the
// same numbers; the page only needs no Prometheus.
//
// Json() (the page's data, GET /dashboard/data):
//   now_s, window_s, interval_s       wall-clock seconds of the last sample, the span covered,
//                                     the sampling interval
//   fleet        over the whole span: hit_rate (engine-reported cached / prompt tokens),
//                predicted_hit_rate, ttft_p50_s, ttft_p99_s (from the TTFT histogram's bucket
//                counts, interpolated within a bucket as Prometheus's histogram_quantile does),
//                requests_per_s, prompt_tokens
//   series       one point per sample: t (wall-clock s), hit_rate, predicted_hit_rate,
//                ttft_p50_s, ttft_p99_s, requests_per_s, and reasons {reason: requests/s}; each
//                point covers the kSmoothing samples before it (null where nothing happened)
//   backends     per backend, now: state, healthy, in_flight, outstanding_prefill_tokens,
//                kv_usage (the engine's, last scrape; null when unknown), hit_rate over the span,
//                requests_per_s over the last kSmoothing samples
//   hot_prefixes the busiest prefixes of the last 10 s: id (hex), requests_per_s, share of all
//                requests, homes (the backends that took them)
//   tenants      per tenant over the span: requests, rate_limited (429s), ttft_p50_s
// A counter that goes down (a removed backend's series gone, a gateway restart) counts as no
// change, never as negative traffic.
//
// Usage:
//   DashboardHistory history({});
//   history.Record({.wall_s = now, .metrics = *ParsePrometheusText(text), .backends = ..., ...});
//   std::string json = history.Json();
//
// Thread-safety: not thread-safe; the gateway calls it under its own mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "net/prometheus_text.h"

namespace warmroute::gateway {

struct DashboardBackendState {
  std::string name;
  std::string state;  // BackendSnapshot::state
};

struct DashboardHotPrefix {
  uint64_t id = 0;
  double requests_per_s = 0;
  std::vector<std::string> homes;  // backend names, busiest first
};

struct DashboardInput {
  double wall_s = 0;  // seconds since the Unix epoch
  std::vector<net::MetricSample> metrics;
  std::vector<DashboardBackendState> backends;
  std::vector<DashboardHotPrefix> hot_prefixes;
};

class DashboardHistory {
 public:
  static constexpr size_t kSmoothing = 10;  // samples each series point covers

  struct Options {
    size_t samples = 900;  // kept: 15 minutes at one per second
    double interval_s = 1;
  };

  explicit DashboardHistory(Options options);

  void Record(const DashboardInput& input);
  std::string Json() const;

  size_t size() const { return ticks_.size(); }

 private:
  struct Backend {
    std::string state;
    double healthy = 0, in_flight = 0, prefill = 0, kv_usage = -1;  // kv_usage -1: unknown
    double requests = 0, prompt = 0, reported = 0, predicted = 0;   // cumulative
  };
  struct Tenant {
    double requests = 0, limited = 0;  // cumulative
    std::map<double, double> ttft;     // le -> cumulative count
  };
  struct Tick {
    double wall_s = 0;
    std::map<std::string, Backend> backends;
    std::map<double, double> ttft;          // le -> cumulative count, summed over backends
    std::map<std::string, double> reasons;  // cumulative answered requests by reason
    std::map<std::string, Tenant> tenants;
  };

  Options options_;
  std::deque<Tick> ticks_;
  std::vector<DashboardHotPrefix> hot_;
};

// The q-quantile (0 < q < 1) of the observations between two cumulative histograms (`before`
// may be empty: from zero), Prometheus's histogram_quantile: linear within the bucket that holds
// the rank, the +Inf bucket's quantile is its lower bound. -1 when there is no observation.
double HistogramQuantile(double q, const std::map<double, double>& before,
                         const std::map<double, double>& after);

}  // namespace warmroute::gateway
