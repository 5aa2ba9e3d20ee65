// The gateway's shared routing state: the sans-I/O routing::Router (policy, prefix index, fleet
// view) plus what only the live gateway has — each backend's address and engine kind, its health
// (backend_health.h: probes and passive outlier ejection) and membership changes from the config
// and the admin API. Every worker thread routes through one Backends, under one mutex: a routing
// decision is microseconds, far below what a lock-free design would be worth here. The mutex is
// adaptive (common/adaptive_mutex.h): a worker that finds it taken spins for the microsecond the
// other holds it instead of sleeping (futex calls per proxied request 0.24-0.37 -> 0.05-0.20).
//
// Backends are known by name; the Router's ids are never reused, so a removed backend's late
// events are ignored by the Router. A backend is one routing target (one Router backend), or,
// when it routes its data-parallel ranks (rank_targets.h), one per rank: "NAME/rank<r>", each
// with its own slice, load and capacity in the Router, and with the backend's address, health,
// draining and models. A Dispatch names the routing target; calls about the backend (probes,
// metrics, discovery, KV events) take the backend's id, its first target's. Health is folded into
// the Router's view lazily: before each decision, backends whose ejection has expired are
// re-admitted (no timer thread needed).
//
// Usage:
//   Backends backends(std::move(policy), router_options, clock, seed, ejection_options);
//   backends.Add(backend_config);
//   absl::StatusOr<Dispatch> d = backends.Route(routing_request);
//   ... dispatch to d->target->host:port ...
//   backends.OnUpstreamResult(d->target->id, /*ok=*/true);
//   backends.OnFirstToken(request_id); backends.OnFinished(request_id, cached_tokens);
//
// Thread-safety: every method is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "common/adaptive_mutex.h"
#include "common/clock.h"
#include "core/kv_events/backend_event_feed.h"
#include "core/routing/policy.h"
#include "core/routing/router.h"
#include "gateway/config/config.h"
#include "gateway/fleet/backend_health.h"
#include "gateway/fleet/engine_metrics.h"
#include "net/tls/tls.h"

namespace warmroute::gateway {

// A backend's address and identity; immutable once created (shared with in-flight requests).
struct BackendTarget {
  routing::BackendId id = 0;
  std::string name;
  std::string url;
  std::string host;
  uint16_t port = 0;
  EngineKind kind = EngineKind::kVllm;
  std::vector<std::string> models;               // configured; empty = any
  int64_t kv_capacity_tokens = 0;                // configured; 0 = unknown (then scraped)
  std::string pool;                              // tenancy_config.h
  std::string address;                           // "host:port", the key of connection pools
  BackendTlsConfig tls;                          // configured (tls.enabled: an https:// url)
  KvEventsConfig kv_events;                      // configured; disabled: no KV-event subscription
  std::shared_ptr<net::TlsContext> tls_context;  // built from `tls`; null for http://
  // A rank's routing target (rank_targets.h): the data-parallel rank it addresses with
  // X-data-parallel-rank; -1 for a backend (then the engine picks the rank).
  int dp_rank = -1;
  // A backend that routes its ranks: the Router ids of its ranks' targets, rank 0 first (whose
  // id is also the backend's). Empty otherwise.
  std::vector<routing::BackendId> rank_targets;

  // The Router ids of a backend's routing targets: its ranks', or its own.
  std::span<const routing::BackendId> routing_ids() const {
    if (!rank_targets.empty()) return rank_targets;
    return {&id, 1};
  }
};

struct Dispatch {
  std::shared_ptr<const BackendTarget> target;
  routing::Reason reason = routing::Reason::kLeastLoad;
  int64_t predicted_cached_tokens = 0;
};

// A backend's KV-event feed as its subscriber last applied it (gateway/kv_events), for the admin
// API and /metrics.
// One data-parallel rank's stream.
struct KvEventsRankStatus {
  kv_events::StreamState state = kv_events::StreamState::kStarting;
  int64_t applied = 0;  // messages applied, live or replayed
};

struct KvEventsStatus {
  bool subscribed = false;
  kv_events::StreamState state = kv_events::StreamState::kStarting;
  kv_events::FeedCounters counters;
  int64_t blocks = 0;                     // engine blocks its writer maps to index entries
  std::string last_error;                 // the latest malformed input's reason
  std::vector<KvEventsRankStatus> ranks;  // rank r's stream at [r]
};

// One rank's routing target of a backend that routes its ranks, as the Router sees it.
struct RankSnapshot {
  std::shared_ptr<const BackendTarget> target;
  int64_t in_flight = 0;
  int64_t outstanding_prefill_tokens = 0;
  int64_t running_decodes = 0;
  int64_t dispatched_total = 0;
  int64_t kv_capacity_tokens = 0;
  double prefill_tokens_per_s = 0;
  int64_t index_entries = 0;
  std::optional<routing::EngineMetricsSample> metrics;  // the rank's share of the scrape
  routing::KvEventState kv_event_state = routing::KvEventState::kNone;
};

// A backend as the admin API and /metrics show it. For a backend that routes its ranks, the
// counts are its ranks' sums, `metrics` the whole scrape, `kv_event_state` the least certain
// rank's, and `ranks` each rank's target.
struct BackendSnapshot {
  std::shared_ptr<const BackendTarget> target;
  std::string state;  // "up", "ejected", "probe_pending", "probe_failed", "draining"
  bool eligible = false;
  int64_t in_flight = 0;
  int64_t outstanding_prefill_tokens = 0;
  int64_t running_decodes = 0;
  int64_t dispatched_total = 0;
  int64_t kv_capacity_tokens = 0;  // configured, else scraped; 0 unknown
  double prefill_tokens_per_s = 0;
  int64_t index_entries = 0;
  std::optional<routing::EngineMetricsSample> metrics;
  double metrics_age_s = -1;  // -1: never scraped
  int64_t ejections = 0;
  std::vector<std::string> discovered_models;  // from the backend's /v1/models
  routing::KvEventState kv_event_state = routing::KvEventState::kNone;  // the Router's view
  KvEventsStatus kv_events;
  std::vector<RankSnapshot> ranks;  // rank r at [r]; empty but for a backend routing its ranks
};

class Backends {
 public:
  Backends(std::unique_ptr<routing::Policy> policy, routing::RouterOptions options,
           const Clock& clock, uint64_t seed, EjectionOptions ejection);
  Backends(const Backends&) = delete;
  Backends& operator=(const Backends&) = delete;

  // AlreadyExists when the name or the address is taken; InvalidArgument when the TLS files of
  // an https:// backend cannot be used (net/tls/tls.h).
  // With `await_first_probe` (a backend added while the gateway runs: admin API, reload) it takes
  // no request until its first probe succeeds.
  absl::StatusOr<std::shared_ptr<const BackendTarget>> Add(const BackendConfig& config,
                                                           bool await_first_probe = false);
  // NotFound for an unknown name. In-flight requests finish; nothing new is sent.
  absl::Status Remove(const std::string& name);
  // Replaces the backend named config.name with one built from `config`, atomically: no routing
  // decision sees the fleet without it (a config reload that changed its url, kind, models or
  // capacity). Its in-flight requests finish on the old one. A draining backend's replacement
  // drains too (an operator's drain outlives a config change). The replacement keeps the old
  // one's health (probe state, ejection) when the address stays; at a new address it awaits its
  // first probe, as a backend added while the gateway runs does. NotFound for an unknown name;
  // AlreadyExists when another backend has the address (the old one then stays).
  absl::StatusOr<std::shared_ptr<const BackendTarget>> Replace(const BackendConfig& config);
  absl::Status SetDraining(const std::string& name, bool draining);
  // Whether the backend named `name` is draining; nullopt for an unknown name.
  std::optional<bool> Draining(const std::string& name) const;

  // Decides where a request goes (routing::Router::Route errors: NotFound when no backend serves
  // the model, Unavailable when none of those is eligible).
  // (By value, as routing::Router::Route: a caller moves it in, and nothing is copied under the
  // lock.)
  // A domain noted for the request (NoteDispatchDomain) is given to the Router with the decision.
  absl::StatusOr<Dispatch> Route(routing::RoutingRequest request);
  // The domain of a precise-keyed request about to be routed (request_key.h), for KV-event
  // attribution (Router::SetDispatchDomain once Route has made it in flight). Kept for the last
  // kMaxNotedDomains notes: one of a request never routed is forgotten in time, and a request
  // routed after that many others were noted is not attributed (its blocks are then not
  // indexed from events: an under-prediction). Takes its own small lock, not the routing lock.
  static constexpr size_t kMaxNotedDomains = 16384;
  void NoteDispatchDomain(uint64_t request_id, const routing::DispatchDomain& domain);
  // The next alternate of a request whose dispatch failed before any byte reached the client;
  // nullopt when none remains (the request is then failed in the Router). A rank's target
  // failed: its backend's other ranks are passed over (the same server), and another backend
  // is tried even when only ranks of the failed one were among the alternates.
  std::optional<Dispatch> Reroute(uint64_t request_id);
  // The speculative insert of the request's prefix chain (routing::Router::CommitInsert), kept
  // off the decision so that the proxy can run it once the request is on its way upstream.
  void CommitInsert(uint64_t request_id);
  void OnFirstToken(uint64_t request_id);
  void OnFinished(uint64_t request_id, std::optional<int64_t> cached_tokens);
  void OnFailed(uint64_t request_id);

  // Passive health: the outcome of one dispatch to `backend` (ok: a non-5xx response head); a
  // rank's target counts for its backend.
  // A success while no backend has a failure on record returns without taking the lock.
  void OnUpstreamResult(routing::BackendId backend, bool ok);
  // Active health and scraping (gateway/fleet/poller.h).
  void OnProbe(routing::BackendId backend, bool ok);
  void OnMetrics(routing::BackendId backend, const ScrapedEngineMetrics& metrics);
  void OnModelsDiscovered(routing::BackendId backend, std::vector<std::string> models);
  // Precise mode (gateway/kv_events/kv_event_subscriber.h): performs what `feed` has pending on
  // the Router, under the lock (decoding happened before, outside it), and records the feed's
  // status for Snapshot(). nullopt when `backend` is no longer present (drop the feed: the
  // Router already forgot its slice); else the backend's BackendHealth::down_episodes(), so
  // that the caller can clear the feed after a health flap.
  std::optional<int64_t> ApplyKvEvents(routing::BackendId backend,
                                       kv_events::BackendEventFeed& feed);
  // The backend's feed was closed while it stays (its kv_events removed by a reload, or the
  // mode turned approximate): its slice is the approximate estimate again (KvEventState::kNone).
  void EndKvEvents(routing::BackendId backend);

  // fn(router) under the routing lock, health refreshed first, for the prewarmer
  // (gateway/fleet/prewarmer.h), which plans and paces with the Router's view and routes through
  // it, and for placement gossip (gateway/fleet/gossip.h), which applies its peers' messages.
  // fn must not call back into this Backends.
  template <typename Fn>
  void WithRouter(Fn&& fn) {
    std::lock_guard lock(mu_);
    RefreshHealth(clock_.Now());
    fn(router_);
  }

  // Present backends, in the order they were added (not their ranks' targets).
  std::vector<std::shared_ptr<const BackendTarget>> Targets() const;
  // The present routing target of Router id `id` (a backend, or a rank's target), or null.
  std::shared_ptr<const BackendTarget> RoutingTarget(routing::BackendId id) const;
  // The present backend or rank target whose name hashes to `name_hash` (routing::NameHash), if
  // any (a backend routing its ranks: its rank 0's target).
  std::optional<routing::BackendId> FindByNameHash(uint64_t name_hash) const;
  std::vector<BackendSnapshot> Snapshot() const;
  // The union of configured and discovered models of the backends in `pools` (all when empty),
  // sorted.
  std::vector<std::string> Models(const std::vector<std::string>& pools = {}) const;
  routing::RouterStats stats() const;
  int64_t index_entries() const;
  int64_t index_bytes() const;
  // How often taking the lock that guards all of the above found it held, and for how long
  // (counts since construction; the gateway's /metrics).
  AdaptiveMutex::Contention routing_lock_contention() const { return mu_.contention(); }

 private:
  struct Entry {
    Entry(std::shared_ptr<const BackendTarget> t, EjectionOptions ejection)
        : target(std::move(t)), health(ejection) {}
    std::shared_ptr<const BackendTarget> target;
    BackendHealth health;
    bool present = true;
    bool draining = false;
    int64_t configured_capacity = 0;
    std::vector<std::string> discovered_models;
    KvEventsStatus kv_events;
    std::vector<std::shared_ptr<const BackendTarget>> ranks;  // rank r's target at [r]
    std::optional<routing::EngineMetricsSample> metrics;      // the last scrape, whole
  };
  // Re-evaluates health for the Router's view; call with mu_ held.
  void RefreshHealth(TimePoint now);
  // Sets every backend's health in the Router's view; call with mu_ held. Panic mode (as
  // Envoy's panic threshold at 0%): when no present, non-draining backend passes its health
  // checks, all of them are treated as healthy — a fleet that is slow to answer probes (e.g.
  // overloaded) keeps serving instead of the gateway refusing everything; dispatch failures
  // still get retries and a 503 if nothing answers.
  void ApplyHealth(TimePoint now);
  // The present backend named `name`, or nullptr; call with mu_ held.
  Entry* FindLocked(const std::string& name);
  // The present backend of routing target `id` (a rank's target: its backend), or nullptr;
  // call with mu_ held.
  Entry* OwnerLocked(routing::BackendId id);
  // AlreadyExists when a present backend other than `replacing` has config's name or address;
  // call with mu_ held.
  absl::Status CheckUniqueLocked(const BackendConfig& config, const Entry* replacing) const;
  std::shared_ptr<const BackendTarget> AddLocked(const BackendConfig& config,
                                                 std::shared_ptr<net::TlsContext> tls_context);
  Dispatch MakeDispatch(routing::BackendId backend, const routing::Decision& decision) const;
  // Fills `snap` of a backend routing its ranks from its ranks' targets; call with mu_ held.
  void AddRanks(const Entry& e, BackendSnapshot& snap) const;
  // Sets failures_on_record_ from the present backends' records; call with mu_ held.
  void UpdateFailuresOnRecord();

  mutable AdaptiveMutex mu_;
  const Clock& clock_;
  EjectionOptions ejection_;
  routing::Router router_;
  std::vector<Entry> entries_;  // by the backend's BackendId (a rank's: empty, target null)
  std::vector<routing::BackendId> owner_;                     // by Router id: the backend's id
  std::vector<std::shared_ptr<const BackendTarget>> routed_;  // by Router id: its target
  // The earliest time an ejected backend comes back (max() when none is ejected).
  TimePoint next_readmission_ = TimePoint::max();
  bool panic_ = false;
  // Whether some present backend's passive record is not clean (BackendHealth::clean()). Written
  // under mu_, read without it: while it is false a success changes nothing, so
  // OnUpstreamResult(ok) skips the lock, one of the lock's takings per proxied request fewer.
  // A success that races with another request's failure may be skipped; the two were concurrent,
  // so counting the failure first is as right as the other order.
  std::atomic<bool> failures_on_record_{false};
  // NoteDispatchDomain's notes, by request id, and their order (ids of notes taken by Route stay
  // in the order until they come out of it).
  std::mutex domains_mu_;
  absl::flat_hash_map<uint64_t, routing::DispatchDomain> domains_;
  std::deque<uint64_t> domain_order_;
};

}  // namespace warmroute::gateway
