// When the gateway's control loop polls each backend, without I/O: the decisions of the poller
// (poller.h), which performs the HTTP exchanges and reports their outcomes back.
// - health probe: every probe_interval;
// - metrics scrape: every scrape_interval (0: off), only for an engine kind that exposes load
//   metrics;
// - model discovery: for a backend configured without models, once its probe has succeeded;
//   again after its probe fails and succeeds again (a restart may serve other models) and when
//   another backend replaces it at the same address; and every probe interval while it answers
//   without a usable model list.
// Each backend has at most one of each outstanding, so a slow backend delays only its own.
// State is kept per address. A removed backend's state is forgotten once nothing of it runs; a
// backend replaced at the same address with other TLS settings gets fresh state once nothing of
// the old one runs (until then none of its polls start).
// Outcomes are logged once per change of state, not per attempt: each report returns whether
// the state changed (PollChange).
//
// Usage (the driver, once per tick):
//   PollPlan plan = schedule.Tick(clock.Now(), backends, options);
//   for (const std::string& address : plan.forget) ... drop its connections
//   for (size_t i : plan.fresh) ... open connections for backends[i], replacing any kept
//   for (const PollStart& s : plan.start) ... start s.kind on backends[s.backend]
//   ... and when a probe ends:
//   if (schedule.OnProbeDone(address, ok) == PollChange::kNowFailed) ... warn
//
// Thread-safety: none; one owner (the poller's io_context thread) calls every method.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/absl_view.h"
#include "common/clock.h"
#include "core/routing/prefix_index.h"

namespace warmroute::gateway {

// The poller's options: the schedule reads the intervals, the poller the timeouts.
struct PollerOptions {
  std::chrono::milliseconds probe_interval{1000};
  std::chrono::milliseconds probe_timeout{1000};
  std::chrono::milliseconds scrape_interval{200};  // 0: no scraping
  std::chrono::milliseconds scrape_timeout{1000};
};

// What the schedule needs of a present backend.
struct PolledBackend {
  // "host:port": the key of its state. Unique among the backends given to one Tick.
  std::string_view address;
  routing::BackendId id = 0;
  bool models_configured = false;     // false: its models are discovered
  bool exposes_load_metrics = false;  // ExposesLoadMetrics(kind): scraped
  // Equal for the same TLS settings (the TLS context's address; null for http://). A backend
  // with another identity than the state kept for its address gets fresh state.
  const void* tls_identity = nullptr;
};

enum class PollKind { kProbe, kScrape, kDiscovery };

struct PollStart {
  PollKind kind = PollKind::kProbe;
  size_t backend = 0;  // an index into the backends given to Tick
};

// What a tick decided.
struct PollPlan {
  // Addresses whose state was forgotten (their backend was removed): their connections can go.
  std::vector<std::string> forget;
  // Backends (indices into Tick's backends) that got fresh state, new at their address or
  // replacing state of other TLS settings: their connections are opened anew.
  std::vector<size_t> fresh;
  // Polls to start now, in the order of the backends (each backend's probe, scrape, discovery).
  std::vector<PollStart> start;
};

// How a report changed what is logged about a backend.
enum class PollChange {
  kNone,       // as before: nothing to log
  kNowOk,      // it works (again, or for the first time for a probe)
  kNowFailed,  // it stopped working (or failed the first time)
};

// How a model discovery ended.
enum class DiscoveryResult {
  kNoAnswer,     // no 200 with a complete body: asked again when next due
  kNoModelList,  // 200 with a body that is no model list: asked again every probe interval
  kModelList,    // a model list: not asked again until the probe fails and recovers, or the
                 // backend at the address is replaced
};

// Invariants: at most one probe, one scrape and one discovery outstanding per address; the state
// of an address is dropped or replaced only while none of the three is outstanding; a discovery
// starts only while the backend's last probe succeeded.
class PollSchedule {
 public:
  PollSchedule() = default;
  PollSchedule(const PollSchedule&) = delete;
  PollSchedule& operator=(const PollSchedule&) = delete;

  // Decides, at `now`, for the present `backends`, which polls start and which state is made or
  // forgotten. The polls returned are outstanding until reported done.
  PollPlan Tick(TimePoint now, std::span<const PolledBackend> backends,
                const PollerOptions& options);

  // A probe of `address` ended; ok: 200 with a complete body. kNowOk / kNowFailed when its
  // outcome differs from the previous probe's (the first probe's is always a change).
  // REQUIRES: a probe of `address` is outstanding.
  PollChange OnProbeDone(std::string_view address, bool ok);
  // A scrape of `address` ended; ok: its metrics were read. kNowFailed for the first failure
  // after success (a backend starts as scraped ok), kNowOk for the first success after failure.
  // REQUIRES: a scrape of `address` is outstanding.
  PollChange OnScrapeDone(std::string_view address, bool ok);
  // A discovery of `address` ended. kNowFailed when its model list became unusable (warned about
  // once), kNowOk when it has a model list again after that.
  // REQUIRES: a discovery of `address` is outstanding.
  PollChange OnDiscoveryDone(std::string_view address, DiscoveryResult result);

  // Whether state is kept for `address`, and for how many addresses.
  bool Tracks(std::string_view address) const { return states_.contains(AbslView(address)); }
  size_t tracked() const { return states_.size(); }

 private:
  struct State {
    explicit State(const void* tls) : tls_identity(tls) {}
    const void* tls_identity;
    TimePoint next_probe{};
    TimePoint next_scrape{};
    TimePoint next_discovery{};
    bool probing = false;
    bool scraping = false;
    bool discovering = false;
    routing::BackendId discovering_for = 0;
    // The backend whose models were discovered.
    std::optional<routing::BackendId> models_known_for;
    // Its last discovery answered 200 without a model list.
    bool models_unusable = false;
    std::optional<bool> last_probe_ok;
    bool last_scrape_ok = true;
    uint64_t seen_in_tick = 0;
    bool busy() const { return probing || scraping || discovering; }
  };
  State& StateOf(std::string_view address);

  uint64_t ticks_ = 0;
  absl::flat_hash_map<std::string, State> states_;
};

}  // namespace warmroute::gateway
