#include "gateway/observability/kv_event_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <set>

namespace warmroute::gateway {
namespace {

// From a millisecond (same host) to tens of seconds (a stalled subscriber).
const prometheus::Histogram::BucketBoundaries kLagBuckets = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0};

constexpr const char* kResults[] = {"applied", "duplicate", "malformed", "replayed", "missed"};
constexpr const char* kReasons[] = {"restart", "clear", "rebuild"};

std::array<int64_t, 5> Results(const kv_events::FeedCounters& c) {
  return {c.applied, c.duplicates, c.malformed, c.replayed, c.missed};
}
std::array<int64_t, 3> Reasons(const kv_events::FeedCounters& c) {
  return {c.restarts, c.clears, c.rebuilds};
}

}  // namespace

KvEventMetrics::KvEventMetrics(prometheus::Registry& registry)
    : events_(prometheus::BuildCounter()
                  .Name("warmroute_kv_events_total")
                  .Help("KV-event messages of a backend's engine, by result (applied, duplicate, "
                        "malformed, replayed, missed)")
                  .Register(registry)),
      state_(prometheus::BuildGauge()
                 .Name("warmroute_kv_event_stream_state")
                 .Help("1 for the current state of a backend's KV-event stream")
                 .Register(registry)),
      resets_(prometheus::BuildCounter()
                  .Name("warmroute_kv_event_resets_total")
                  .Help("Clears of a backend's event-fed index slice, by reason (restart, clear, "
                        "rebuild)")
                  .Register(registry)),
      lag_(prometheus::BuildHistogram()
               .Name("warmroute_kv_event_lag_seconds")
               .Help("From a KV-event batch's engine timestamp to its application to the index")
               .Register(registry)) {}

void KvEventMetrics::OnLags(std::string_view backend, std::span<const double> lags_s) {
  std::lock_guard lock(mu_);
  auto it = series_.find(std::string(backend));
  if (it == series_.end()) return;  // shown from the next scrape on; its first lags are lost
  for (double lag : lags_s) it->second.lag->Observe(lag < 0 ? 0 : lag);
}

void KvEventMetrics::RemoveLocked(Series& s) {
  for (prometheus::Counter* c : s.events) events_.Remove(c);
  for (prometheus::Counter* c : s.resets) resets_.Remove(c);
  for (prometheus::Gauge* g : s.states) state_.Remove(g);
  lag_.Remove(s.lag);
}

void KvEventMetrics::Update(const std::vector<BackendSnapshot>& snapshot) {
  std::lock_guard lock(mu_);
  std::set<std::string> present;
  for (const BackendSnapshot& b : snapshot) {
    if (!b.kv_events.subscribed) continue;
    const std::string& name = b.target->name;
    present.insert(name);
    auto it = series_.find(name);
    if (it == series_.end()) {
      Series s;
      for (size_t i = 0; i < s.events.size(); ++i) {
        s.events[i] = &events_.Add({{"backend", name}, {"result", kResults[i]}});
      }
      for (size_t i = 0; i < s.resets.size(); ++i) {
        s.resets[i] = &resets_.Add({{"backend", name}, {"reason", kReasons[i]}});
      }
      for (size_t i = 0; i < s.states.size(); ++i) {
        s.states[i] = &state_.Add(
            {{"backend", name},
             {"state", std::string(kv_events::StreamStateName(kv_events::kStreamStates[i]))}});
      }
      s.lag = &lag_.Add({{"backend", name}}, kLagBuckets);
      s.id = b.target->id;
      it = series_.emplace(name, std::move(s)).first;
    }
    Series& s = it->second;
    if (s.id != b.target->id) {  // replaced: a new feed counting from 0
      s.id = b.target->id;
      s.counted = {};
    }
    const auto now_results = Results(b.kv_events.counters);
    const auto counted_results = Results(s.counted);
    for (size_t i = 0; i < now_results.size(); ++i) {
      if (now_results[i] > counted_results[i]) {
        s.events[i]->Increment(static_cast<double>(now_results[i] - counted_results[i]));
      }
    }
    const auto now_reasons = Reasons(b.kv_events.counters);
    const auto counted_reasons = Reasons(s.counted);
    for (size_t i = 0; i < now_reasons.size(); ++i) {
      if (now_reasons[i] > counted_reasons[i]) {
        s.resets[i]->Increment(static_cast<double>(now_reasons[i] - counted_reasons[i]));
      }
    }
    s.counted = b.kv_events.counters;
    for (size_t i = 0; i < s.states.size(); ++i) {
      s.states[i]->Set(kv_events::kStreamStates[i] == b.kv_events.state ? 1 : 0);
    }
  }
  for (auto it = series_.begin(); it != series_.end();) {
    if (present.count(it->first)) {
      ++it;
      continue;
    }
    RemoveLocked(it->second);
    it = series_.erase(it);
  }
}

}  // namespace warmroute::gateway
