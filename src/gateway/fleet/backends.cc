#include "gateway/fleet/backends.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "core/routing/policies/policy_util.h"
#include "gateway/fleet/rank_targets.h"

namespace warmroute::gateway {

using routing::BackendId;

namespace {

// The TLS context of an https:// backend (null for http://); errors name the tls key at fault.
absl::StatusOr<std::shared_ptr<net::TlsContext>> TlsContextOf(const BackendConfig& config) {
  if (!config.tls.enabled) return std::shared_ptr<net::TlsContext>();
  absl::StatusOr<std::shared_ptr<net::TlsContext>> context =
      net::MakeTlsClientContext({.ca_file = config.tls.ca_file,
                                 .cert_file = config.tls.cert_file,
                                 .key_file = config.tls.key_file});
  if (context.ok()) return context;
  return absl::InvalidArgumentError(absl::StrCat("backend ", config.name, ": tls.",
                                                 ParamOf(context.status()).value_or(""), ": ",
                                                 context.status().message()));
}

// The connection pool's key of a backend: BackendTarget::address.
std::string AddressOf(const BackendConfig& config) {
  return absl::StrCat(config.host, ":", config.port);
}

}  // namespace

Backends::Backends(std::unique_ptr<routing::Policy> policy, routing::RouterOptions options,
                   const Clock& clock, uint64_t seed, EjectionOptions ejection)
    : clock_(clock), ejection_(ejection), router_(std::move(policy), options, clock, seed) {}

absl::StatusOr<std::shared_ptr<const BackendTarget>> Backends::Add(const BackendConfig& config,
                                                                   bool await_first_probe) {
  WR_ASSIGN_OR_RETURN(std::shared_ptr<net::TlsContext> tls, TlsContextOf(config));
  std::lock_guard lock(mu_);
  absl::Status unique = CheckUniqueLocked(config, /*replacing=*/nullptr);
  if (!unique.ok()) return unique;
  std::shared_ptr<const BackendTarget> added = AddLocked(config, std::move(tls));
  if (await_first_probe) {
    FindLocked(config.name)->health.AwaitFirstProbe();
    ApplyHealth(clock_.Now());
  }
  return added;
}

absl::Status Backends::Remove(const std::string& name) {
  std::lock_guard lock(mu_);
  Entry* e = FindLocked(name);
  if (e == nullptr) return absl::NotFoundError(absl::StrCat("no backend named '", name, "'"));
  e->present = false;
  for (BackendId id : e->target->routing_ids()) router_.RemoveBackend(id);
  ApplyHealth(clock_.Now());
  UpdateFailuresOnRecord();
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const BackendTarget>> Backends::Replace(
    const BackendConfig& config) {
  WR_ASSIGN_OR_RETURN(std::shared_ptr<net::TlsContext> tls, TlsContextOf(config));
  std::lock_guard lock(mu_);
  Entry* old = FindLocked(config.name);
  if (old == nullptr) {
    return absl::NotFoundError(absl::StrCat("no backend named '", config.name, "'"));
  }
  absl::Status unique = CheckUniqueLocked(config, old);
  if (!unique.ok()) return unique;
  old->present = false;
  const bool draining = old->draining;
  // The same address is the same engine: its health goes on. A new one is unprobed.
  const bool same_address = old->target->address == AddressOf(config);
  const BackendHealth health = old->health;
  for (BackendId id : old->target->routing_ids()) router_.RemoveBackend(id);
  // AddLocked may grow entries_: `old` is not used past here.
  std::shared_ptr<const BackendTarget> added = AddLocked(config, std::move(tls));
  Entry* e = FindLocked(config.name);
  if (same_address) {
    e->health = health;
  } else {
    e->health.AwaitFirstProbe();
  }
  if (draining) {
    e->draining = true;
    for (BackendId id : e->target->routing_ids()) router_.SetDraining(id, true);
  }
  ApplyHealth(clock_.Now());
  UpdateFailuresOnRecord();
  return added;
}

Backends::Entry* Backends::FindLocked(const std::string& name) {
  for (Entry& e : entries_) {
    if (e.present && e.target && e.target->name == name) return &e;
  }
  return nullptr;
}

Backends::Entry* Backends::OwnerLocked(BackendId id) {
  if (id >= owner_.size()) return nullptr;
  Entry& e = entries_[owner_[id]];
  return e.present && e.target ? &e : nullptr;
}

absl::Status Backends::CheckUniqueLocked(const BackendConfig& config,
                                         const Entry* replacing) const {
  const std::string address = AddressOf(config);
  for (const Entry& e : entries_) {
    if (!e.present || !e.target || &e == replacing) continue;
    if (e.target->name == config.name) {
      return absl::AlreadyExistsError(absl::StrCat("a backend named '", config.name, "' exists"));
    }
    if (e.target->address == address) {
      return absl::AlreadyExistsError(
          absl::StrCat("backend '", e.target->name, "' already has ", config.url));
    }
  }
  return absl::OkStatus();
}

std::shared_ptr<const BackendTarget> Backends::AddLocked(
    const BackendConfig& config, std::shared_ptr<net::TlsContext> tls_context) {
  const int ranks = config.kv_events.routes_ranks() ? config.kv_events.dp_ranks : 0;
  std::vector<BackendId> ids;
  if (ranks == 0) {
    ids.push_back(router_.AddBackend({.name = config.name,
                                      .models = config.models,
                                      .kv_capacity_tokens = config.kv_capacity_tokens,
                                      .pool = config.pool}));
  }
  for (int r = 0; r < ranks; ++r) {
    ids.push_back(
        router_.AddBackend({.name = RankTargetName(config.name, r),
                            .models = config.models,
                            .kv_capacity_tokens = RankShare(config.kv_capacity_tokens, ranks, r),
                            .pool = config.pool}));
  }
  const BackendId id = ids.front();
  auto target = std::make_shared<BackendTarget>();
  target->id = id;
  target->name = config.name;
  target->url = config.url;
  target->host = config.host;
  target->port = config.port;
  target->kind = config.kind;
  target->models = config.models;
  target->kv_capacity_tokens = config.kv_capacity_tokens;
  target->pool = config.pool;
  target->address = AddressOf(config);
  target->tls = config.tls;
  target->kv_events = config.kv_events;
  target->tls_context = std::move(tls_context);
  if (ranks > 0) target->rank_targets = ids;
  while (entries_.size() <= ids.back()) entries_.push_back(Entry(nullptr, ejection_));
  owner_.resize(entries_.size(), 0);
  routed_.resize(entries_.size());
  Entry& entry = entries_[id];
  entry = Entry(target, ejection_);
  entry.configured_capacity = config.kv_capacity_tokens;
  for (int r = 0; r < ranks; ++r) {
    auto rank = std::make_shared<BackendTarget>(*target);
    rank->id = ids[static_cast<size_t>(r)];
    rank->name = RankTargetName(config.name, r);
    rank->dp_rank = r;
    rank->rank_targets.clear();
    entry.ranks.push_back(rank);
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    owner_[ids[i]] = id;
    routed_[ids[i]] = ranks > 0 ? entry.ranks[i] : target;
  }
  ApplyHealth(clock_.Now());
  return target;
}

absl::Status Backends::SetDraining(const std::string& name, bool draining) {
  std::lock_guard lock(mu_);
  for (Entry& e : entries_) {
    if (e.present && e.target && e.target->name == name) {
      e.draining = draining;
      for (BackendId id : e.target->routing_ids()) router_.SetDraining(id, draining);
      ApplyHealth(clock_.Now());
      return absl::OkStatus();
    }
  }
  return absl::NotFoundError(absl::StrCat("no backend named '", name, "'"));
}

std::optional<bool> Backends::Draining(const std::string& name) const {
  std::lock_guard lock(mu_);
  for (const Entry& e : entries_) {
    if (e.present && e.target && e.target->name == name) return e.draining;
  }
  return std::nullopt;
}

void Backends::RefreshHealth(TimePoint now) {
  if (now < next_readmission_) return;
  next_readmission_ = TimePoint::max();
  for (Entry& e : entries_) {
    if (!e.present || !e.target) continue;
    if (e.health.ejected(now)) {
      next_readmission_ = std::min(next_readmission_, e.health.ejected_until());
    }
  }
  ApplyHealth(now);
}

void Backends::ApplyHealth(TimePoint now) {
  bool candidates = false;
  bool any_available = false;
  for (const Entry& e : entries_) {
    if (!e.present || !e.target || e.draining) continue;
    candidates = true;
    any_available |= e.health.Available(now);
  }
  const bool panic = candidates && !any_available;
  if (panic != panic_) {
    if (panic) {
      spdlog::warn(
          "no backend passes its health checks: routing to all of them (panic mode) "
          "rather than refusing every request");
    } else {
      spdlog::info("a backend passes its health checks again: panic mode over");
    }
    panic_ = panic;
  }
  for (const Entry& e : entries_) {
    if (!e.present || !e.target) continue;
    const bool healthy = panic_ || e.health.Available(now);
    for (BackendId id : e.target->routing_ids()) router_.SetHealthy(id, healthy);
  }
}

Dispatch Backends::MakeDispatch(BackendId backend, const routing::Decision& decision) const {
  return Dispatch{routed_[backend], decision.reason, decision.predicted_cached_tokens};
}

void Backends::NoteDispatchDomain(uint64_t request_id, const routing::DispatchDomain& domain) {
  std::lock_guard lock(domains_mu_);
  domains_[request_id] = domain;
  domain_order_.push_back(request_id);
  while (domain_order_.size() > kMaxNotedDomains) {
    domains_.erase(domain_order_.front());
    domain_order_.pop_front();
  }
}

absl::StatusOr<Dispatch> Backends::Route(routing::RoutingRequest request) {
  const uint64_t id = request.id;
  std::optional<routing::DispatchDomain> domain;
  {
    std::lock_guard lock(domains_mu_);
    if (auto it = domains_.find(id); it != domains_.end()) {
      domain = it->second;
      domains_.erase(it);
    }
  }
  std::lock_guard lock(mu_);
  RefreshHealth(clock_.Now());
  absl::StatusOr<routing::Decision> decision = router_.Route(std::move(request));
  if (!decision.ok()) return decision.status();
  if (domain) router_.SetDispatchDomain(id, *domain);
  return MakeDispatch(decision->backend, *decision);
}

std::optional<Dispatch> Backends::Reroute(uint64_t request_id) {
  std::lock_guard lock(mu_);
  RefreshHealth(clock_.Now());
  // A rank's target fails with its backend (one server): the retry goes to another backend.
  std::optional<BackendId> next = router_.Reroute(
      request_id, [this](BackendId failed, BackendId b) { return owner_[failed] == owner_[b]; });
  if (!next) return std::nullopt;
  return Dispatch{routed_[*next], routing::Reason::kLeastLoad, 0};
}

void Backends::CommitInsert(uint64_t request_id) {
  std::lock_guard lock(mu_);
  router_.CommitInsert(request_id);
}

void Backends::OnFirstToken(uint64_t request_id) {
  std::lock_guard lock(mu_);
  router_.OnFirstToken(request_id);
}

void Backends::OnFinished(uint64_t request_id, std::optional<int64_t> cached_tokens) {
  std::lock_guard lock(mu_);
  router_.OnFinished(request_id, cached_tokens);
}

void Backends::OnFailed(uint64_t request_id) {
  std::lock_guard lock(mu_);
  router_.OnFailed(request_id);
}

void Backends::OnUpstreamResult(BackendId backend, bool ok) {
  if (ok && !failures_on_record_.load(std::memory_order_relaxed)) return;
  std::lock_guard lock(mu_);
  Entry* owner = OwnerLocked(backend);
  if (owner == nullptr) return;
  Entry& e = *owner;
  const TimePoint now = clock_.Now();
  if (ok) {
    e.health.OnSuccess();
  } else if (e.health.OnFailure(now)) {
    next_readmission_ = std::min(next_readmission_, e.health.ejected_until());
    ApplyHealth(now);
  }
  UpdateFailuresOnRecord();
}

void Backends::UpdateFailuresOnRecord() {
  bool any = false;
  for (const Entry& e : entries_) any |= e.present && e.target && !e.health.clean();
  failures_on_record_.store(any, std::memory_order_relaxed);
}

void Backends::OnProbe(BackendId backend, bool ok) {
  std::lock_guard lock(mu_);
  Entry* owner = OwnerLocked(backend);
  if (owner == nullptr) return;
  Entry& e = *owner;
  const bool was = e.health.Available(clock_.Now());
  e.health.OnProbe(ok);
  if (e.health.Available(clock_.Now()) != was) ApplyHealth(clock_.Now());
}

void Backends::OnMetrics(BackendId backend, const ScrapedEngineMetrics& metrics) {
  std::lock_guard lock(mu_);
  Entry* e = OwnerLocked(backend);
  if (e == nullptr) return;
  e->metrics = metrics.sample;
  const int ranks = static_cast<int>(e->ranks.size());
  const std::span<const BackendId> ids = e->target->routing_ids();
  for (size_t i = 0; i < ids.size(); ++i) {
    const BackendId id = ids[i];
    const ScrapedEngineMetrics own =
        ranks > 0 ? RankMetrics(metrics, ranks, static_cast<int>(i)) : metrics;
    router_.OnMetrics(id, own.sample);
    // The engine's own KV capacity sizes the target's index slice, unless the config set one.
    if (e->configured_capacity == 0 && own.kv_capacity_tokens && *own.kv_capacity_tokens > 0 &&
        router_.fleet().backend(id).kv_capacity_tokens != *own.kv_capacity_tokens) {
      router_.SetKvCapacity(id, *own.kv_capacity_tokens);
    }
  }
}

void Backends::OnModelsDiscovered(BackendId backend, std::vector<std::string> models) {
  std::lock_guard lock(mu_);
  Entry* e = OwnerLocked(backend);
  if (e == nullptr) return;
  // A backend configured without models serves what it says it serves: requests for other
  // models are not sent to it (the gateway answers 404 when no backend has the model).
  if (e->target->models.empty() && !models.empty()) {
    for (BackendId id : e->target->routing_ids()) router_.SetModels(id, models);
  }
  e->discovered_models = std::move(models);
}

std::optional<int64_t> Backends::ApplyKvEvents(BackendId backend,
                                               kv_events::BackendEventFeed& feed) {
  std::lock_guard lock(mu_);
  if (backend >= entries_.size() || !entries_[backend].present) return std::nullopt;
  Entry& e = entries_[backend];
  feed.ApplyTo(router_);
  e.kv_events.subscribed = true;
  e.kv_events.state = feed.state();
  e.kv_events.counters = feed.counters();
  e.kv_events.blocks = static_cast<int64_t>(feed.blocks());
  e.kv_events.ranks.resize(static_cast<size_t>(feed.dp_ranks()));
  for (int r = 0; r < feed.dp_ranks(); ++r) {
    e.kv_events.ranks[static_cast<size_t>(r)] = {.state = feed.rank_state(r),
                                                 .applied = feed.rank_applied(r)};
  }
  if (e.kv_events.last_error != feed.last_error()) e.kv_events.last_error = feed.last_error();
  return e.health.down_episodes();
}

void Backends::EndKvEvents(BackendId backend) {
  std::lock_guard lock(mu_);
  if (backend >= entries_.size() || !entries_[backend].present) return;
  entries_[backend].kv_events = KvEventsStatus{};
  for (BackendId id : entries_[backend].target->routing_ids()) {
    router_.SetKvEventState(id, routing::KvEventState::kNone);
  }
}

std::vector<std::shared_ptr<const BackendTarget>> Backends::Targets() const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<const BackendTarget>> out;
  for (const Entry& e : entries_) {
    if (e.present && e.target) out.push_back(e.target);
  }
  return out;
}

std::shared_ptr<const BackendTarget> Backends::RoutingTarget(BackendId id) const {
  std::lock_guard lock(mu_);
  if (id >= owner_.size() || !entries_[owner_[id]].present) return nullptr;
  return routed_[id];
}

std::optional<routing::BackendId> Backends::FindByNameHash(uint64_t name_hash) const {
  std::lock_guard lock(mu_);
  for (const Entry& e : entries_) {
    if (!e.present || !e.target) continue;
    if (routing::NameHash(e.target->name) == name_hash) return e.target->id;
    for (const auto& rank : e.ranks) {
      if (routing::NameHash(rank->name) == name_hash) return rank->id;
    }
  }
  return std::nullopt;
}

std::vector<BackendSnapshot> Backends::Snapshot() const {
  std::lock_guard lock(mu_);
  const TimePoint now = clock_.Now();
  std::vector<BackendSnapshot> out;
  for (const Entry& e : entries_) {
    if (!e.present || !e.target) continue;
    const routing::BackendState& s = router_.fleet().backend(e.target->id);
    BackendSnapshot snap;
    snap.target = e.target;
    snap.state = e.draining ? "draining" : std::string(e.health.StateName(now));
    snap.eligible = e.health.Available(now) && !e.draining;
    snap.in_flight = s.in_flight;
    snap.outstanding_prefill_tokens = s.outstanding_prefill_tokens;
    snap.running_decodes = s.running_decodes;
    snap.dispatched_total = s.dispatched_total;
    snap.kv_capacity_tokens = s.kv_capacity_tokens;
    snap.prefill_tokens_per_s = s.prefill_tokens_per_s;
    snap.index_entries = static_cast<int64_t>(router_.index().entries(e.target->id));
    snap.metrics = s.metrics;
    snap.ejections = e.health.ejections();
    snap.discovered_models = e.discovered_models;
    snap.kv_event_state = s.kv_events;
    snap.kv_events = e.kv_events;
    if (!e.ranks.empty()) AddRanks(e, snap);
    if (snap.metrics) snap.metrics_age_s = ToSeconds(now - snap.metrics->scraped_at);
    out.push_back(std::move(snap));
  }
  return out;
}

void Backends::AddRanks(const Entry& e, BackendSnapshot& snap) const {
  // The counts are the ranks' sums (the backend's id is rank 0's: its figures are rank 0's).
  snap.in_flight = snap.outstanding_prefill_tokens = snap.running_decodes = 0;
  snap.dispatched_total = snap.kv_capacity_tokens = snap.index_entries = 0;
  snap.prefill_tokens_per_s = 0;
  snap.metrics = e.metrics;
  bool any_uncertain = false, all_precise = true;
  for (const std::shared_ptr<const BackendTarget>& rank : e.ranks) {
    const routing::BackendState& s = router_.fleet().backend(rank->id);
    RankSnapshot r{.target = rank,
                   .in_flight = s.in_flight,
                   .outstanding_prefill_tokens = s.outstanding_prefill_tokens,
                   .running_decodes = s.running_decodes,
                   .dispatched_total = s.dispatched_total,
                   .kv_capacity_tokens = s.kv_capacity_tokens,
                   .prefill_tokens_per_s = s.prefill_tokens_per_s,
                   .index_entries = static_cast<int64_t>(router_.index().entries(rank->id)),
                   .metrics = s.metrics,
                   .kv_event_state = s.kv_events};
    snap.in_flight += r.in_flight;
    snap.outstanding_prefill_tokens += r.outstanding_prefill_tokens;
    snap.running_decodes += r.running_decodes;
    snap.dispatched_total += r.dispatched_total;
    snap.kv_capacity_tokens += r.kv_capacity_tokens;
    snap.prefill_tokens_per_s += r.prefill_tokens_per_s;
    snap.index_entries += r.index_entries;
    any_uncertain |= r.kv_event_state == routing::KvEventState::kUncertain;
    all_precise &= r.kv_event_state == routing::KvEventState::kPrecise;
    snap.ranks.push_back(std::move(r));
  }
  snap.kv_event_state = any_uncertain ? routing::KvEventState::kUncertain
                        : all_precise ? routing::KvEventState::kPrecise
                                      : routing::KvEventState::kNone;
}

std::vector<std::string> Backends::Models(const std::vector<std::string>& pools) const {
  std::lock_guard lock(mu_);
  std::set<std::string> models;
  for (const Entry& e : entries_) {
    if (!e.present || !e.target) continue;
    if (!pools.empty() && std::find(pools.begin(), pools.end(), e.target->pool) == pools.end()) {
      continue;
    }
    models.insert(e.target->models.begin(), e.target->models.end());
    models.insert(e.discovered_models.begin(), e.discovered_models.end());
  }
  return {models.begin(), models.end()};
}

routing::RouterStats Backends::stats() const {
  std::lock_guard lock(mu_);
  return router_.stats();
}

int64_t Backends::index_entries() const {
  std::lock_guard lock(mu_);
  return static_cast<int64_t>(router_.index().entries());
}

int64_t Backends::index_bytes() const {
  std::lock_guard lock(mu_);
  return static_cast<int64_t>(router_.index().MemoryBytes());
}

}  // namespace warmroute::gateway
