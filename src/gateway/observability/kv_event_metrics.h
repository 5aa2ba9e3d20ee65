// The KV-event series of the gateway's /metrics (precise mode, gateway/kv_events), one set per
// subscribed backend:
//
//   warmroute_kv_events_total{backend,result}        counter: messages by result — applied,
//                                                    duplicate, malformed, replayed (applied
//                                                    from a replay reply; also in applied),
//                                                    missed (sequence numbers lost for good)
//   warmroute_kv_event_stream_state{backend,state}   gauge: 1 for the stream's current state
//                                                    (starting, precise, awaiting_replay,
//                                                    rebuilding), 0 for the others
//   warmroute_kv_event_resets_total{backend,reason}  counter: slice clears by reason — restart
//                                                    (the sequence went back), clear (the
//                                                    engine's AllBlocksCleared, or a health
//                                                    flap), rebuild (a loss: unrepaired gap,
//                                                    malformed message)
//   warmroute_kv_event_lag_seconds{backend}          histogram: a batch's engine timestamp to
//                                                    its application to the index (includes
//                                                    the clocks' offset between hosts)
//
// Counters follow the feed's cumulative counts (read from Backends' snapshot at each scrape);
// a backend replaced by a reload starts a new feed and its series keep counting up. A backend
// removed, or no longer subscribed, loses its series.
//
// Thread-safety: every method is thread-safe.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/fleet/backends.h"

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace warmroute::gateway {

class KvEventMetrics {
 public:
  explicit KvEventMetrics(prometheus::Registry& registry);
  KvEventMetrics(const KvEventMetrics&) = delete;
  KvEventMetrics& operator=(const KvEventMetrics&) = delete;

  // Lags (seconds) of batches of `backend` just applied.
  void OnLags(std::string_view backend, std::span<const double> lags_s);
  // Refreshes the series from the backends' snapshot.
  void Update(const std::vector<BackendSnapshot>& snapshot);

 private:
  struct Series {
    routing::BackendId id = 0;
    kv_events::FeedCounters counted;  // what the counters hold of this feed
    std::array<prometheus::Counter*, 5> events{};
    std::array<prometheus::Counter*, 3> resets{};
    std::array<prometheus::Gauge*, 4> states{};
    prometheus::Histogram* lag = nullptr;
  };
  void RemoveLocked(Series& series);

  std::mutex mu_;
  prometheus::Family<prometheus::Counter>& events_;
  prometheus::Family<prometheus::Gauge>& state_;
  prometheus::Family<prometheus::Counter>& resets_;
  prometheus::Family<prometheus::Histogram>& lag_;
  std::map<std::string, Series> series_;
};

}  // namespace warmroute::gateway
