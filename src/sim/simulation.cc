#include "sim/simulation.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/rng.h"
#include "common/status.h"
#include "core/engine/engine_core.h"
#include "core/engine/token_generator.h"
#include "core/kv_events/backend_event_feed.h"
#include "core/kv_events/event_encoder.h"
#include "core/request/tokenizer.h"
#include "core/routing/domain_attribution.h"
#include "core/routing/placement_gossip.h"
#include "core/routing/router.h"
#include "sim/event_queue.h"
#include "sim/infinite_cache_bound.h"
#include "sim/prepared_request.h"

namespace warmroute::sim {
namespace {

struct Event {
  enum class Kind : uint8_t {
    kDeliver,         // the request reaches its replica's engine
    kStepEnd,         // a replica's step completes
    kFirstTokenSeen,  // the gateway sees the first token
    kFinishSeen,      // the gateway sees the end of the response (a: cached, b: generated)
    kFailSeen,        // the gateway sees an engine error
    kScrape,          // the gateway's scraper reads a replica's metrics
    kMetricsSeen,     // the scrape's result reaches the router (a, b, x, scraped_at)
    kSeriesTick,      // the results' load series takes a sample (not seen by the router)
    kMembership,      // SimOptions::membership: a replica is added or removed
    kPrewarmTick,     // the gateways' prewarm planners may send more (pacing)
    // Precise mode (SimOptions::prefix_mode):
    kKvEventSeen,      // a replica's KV-event message reaches the router (id: its sequence number)
    kReplayAtReplica,  // a replay request reaches the replica (id: the first wanted sequence)
    kReplaySeen,       // the replica's replay reply reaches the router
    // SimOptions::gossip:
    kGossipFlush,  // the gateway sends the placements it made since its last message
    kGossipSeen,   // a peer's message reaches the gateway
  };
  Kind kind = Kind::kDeliver;
  uint16_t gateway = 0;  // the gateway that sees it (a scrape: the gateway that scrapes)
  uint32_t replica = 0;
  uint64_t id = 0;
  int64_t a = 0;
  int64_t b = 0;
  double x = 0;
  TimePoint scraped_at{};
};

// A request between its arrival at the gateway and the gateway's sight of its end.
struct Flight {
  TimePoint arrival;
  uint16_t gateway = 0;  // the gateway that routed it
  uint32_t replica = 0;
  uint64_t seed = 0;
  bool first_token_seen = false;
  // A prewarm or handoff request (SimOptions::prewarm), not client traffic.
  std::optional<routing::PrewarmReason> prewarm;
  int64_t predicted_cached = 0;   // the routing decision's predicted cached tokens
  engine::EngineRequest pending;  // until delivered to the engine
};

struct Replica {
  std::unique_ptr<engine::EngineCore> core;
  bool stepping = false;
  engine::StepOutput step;  // the step in progress: its events take effect at its end
  int64_t prefill_since_tick = 0;
  // Precise mode: its KV-event publisher.
  uint64_t next_seq = 0;
  std::deque<std::pair<uint64_t, std::string>> replay_buffer;  // the last replay_buffer_steps
};

using Message = std::pair<uint64_t, std::string>;  // a KV-event message: sequence, payload

// One gateway replica (SimOptions::gateways): its router and, in precise mode, its subscription
// to every replica's KV events. Per replica: the feed (null: not a backend), the messages and
// the replay replies on their way to this gateway, which arrive in the order sent (every one
// takes the same delay).
using Prewarm = routing::PrewarmPlanner<engine::EngineRequest>;

struct Gateway {
  std::unique_ptr<routing::Router> router;
  std::unique_ptr<Prewarm> prewarm;                          // null: prewarm off
  absl::flat_hash_map<uint64_t, Prewarm::Job> prewarm_sent;  // by request id, until it ends
  std::vector<std::unique_ptr<kv_events::BackendEventFeed>> feeds;
  std::vector<std::deque<Message>> in_transit;
  std::vector<std::deque<std::vector<Message>>> replies_in_transit;
  // SimOptions::gossip: what it will send, and its peers' messages on their way to it (in the
  // order sent: every one takes the same delay). Null outbox: gossip off.
  std::unique_ptr<routing::GossipOutbox> outbox;
  std::unique_ptr<routing::GossipReceiver> receiver;
  std::deque<std::string> gossip_in_transit;
};

absl::Status ValidateOptions(const SimOptions& options) {
  if (options.replicas.empty()) return InvalidParam("replicas", "the fleet has no replicas");
  for (const ReplicaSpec& spec : options.replicas) {
    if (spec.profile == nullptr || spec.kv_capacity_tokens <= 0) {
      return InvalidParam("replica-spec", "every replica needs a profile and a KV capacity > 0");
    }
  }
  if (options.network_delay < Duration(0)) {
    return InvalidParam("network-delay-ms", "the network delay must not be negative");
  }
  if (options.scrape_interval <= Duration(0)) {
    return InvalidParam("scrape-interval-ms", "the scrape interval must be positive");
  }
  if (options.series_interval <= Duration(0)) {
    return InvalidParam("series-interval-s", "the series interval must be positive");
  }
  if (options.hit_window <= Duration(0)) {
    return InvalidParam("hit-window-s", "the hit-rate window must be positive");
  }
  if (options.gateways < 1 || options.gateways > kMaxSimGateways) {
    return InvalidParam("gateways", absl::StrCat("the number of gateways must be in 1..",
                                                 kMaxSimGateways, ", got ", options.gateways));
  }
  if (options.event_delay && *options.event_delay < Duration(0)) {
    return InvalidParam("event-delay-ms", "the KV-event delay must not be negative");
  }
  if (!(options.event_loss >= 0 && options.event_loss <= 1)) {
    return InvalidParam("event-loss", "the KV-event loss probability must be in [0, 1]");
  }
  if (const auto& change = options.membership; change.has_value()) {
    if (options.replicas.size() < 2 || change->replica >= options.replicas.size()) {
      return InvalidParam("membership",
                          absl::StrCat("a membership change needs a fleet of at "
                                       "least 2 replicas and one of them; got r",
                                       change->replica, " of ", options.replicas.size()));
    }
    if (change->at <= Duration(0)) {
      return InvalidParam("membership", "the membership change must come after the start");
    }
  }
  return absl::OkStatus();
}

class EventLoop {
 public:
  // Fleet mode (AddGateways called): one engine per options.replicas entry. Pooled mode: one
  // engine built from `pooled_config` and `pooled_profile`, no gateway.
  EventLoop(const SimOptions& options, std::unique_ptr<workload::Workload> workload,
            std::string name)
      : options_(options),
        workload_(std::move(workload)),
        generator_(tokenizer_),
        precise_(options.prefix_mode == SimOptions::PrefixMode::kPrecise),
        block_size_(engine::DefaultEngineConfig(*options.replicas[0].profile,
                                                options.replicas[0].kv_capacity_tokens)
                        .block_size),
        event_delay_(options.event_delay.value_or(options.network_delay)),
        preparer_(tokenizer_, options.prefix_key, std::string(options.replicas[0].profile->model),
                  options.seed, precise_ ? block_size_ : 0),
        loss_rng_(Mix64(options.seed ^ 0x6b765f6c6f7373ull)),
        gateway_rng_(Mix64(options.seed ^ 0x67617465776179ull)),
        gossip_rng_(Mix64(options.seed ^ 0x676f73736970ull)),
        gossip_(options.gossip.has_value() && options.gateways > 1) {
    result_.name = std::move(name);
    result_.prefix_mode = std::string(PrefixModeName(options.prefix_mode));
  }

  // options.gateways routers, each with its own policy from `make_policy` and its own seed
  // (gateway 0's is the one a single gateway has). Each knows every replica from the start,
  // except the one a membership change adds.
  absl::Status AddGateways(const PolicyFactory& make_policy) {
    const size_t n = options_.replicas.size();
    for (int g = 0; g < options_.gateways; ++g) {
      WR_ASSIGN_OR_RETURN(std::unique_ptr<routing::Policy> policy, make_policy());
      if (policy == nullptr) return absl::InvalidArgumentError("no policy");
      if (g == 0) result_.name = std::string(policy->name());
      Gateway gateway;
      gateway.router = std::make_unique<routing::Router>(
          std::move(policy), options_.router, clock_,
          Mix64((options_.seed ^ 0x726f75746572ull) + static_cast<uint64_t>(g)));
      if (options_.prewarm) gateway.prewarm = std::make_unique<Prewarm>(*options_.prewarm);
      if (gossip_) {
        const auto sender = static_cast<uint64_t>(g);
        gateway.outbox = std::make_unique<routing::GossipOutbox>(sender, routing::GossipOptions{});
        gateway.receiver =
            std::make_unique<routing::GossipReceiver>(sender, routing::GossipReceiverOptions{});
        gateway.router->SetPlacementObserver(
            [router = gateway.router.get(), outbox = gateway.outbox.get()](
                routing::BackendId b, std::span<const uint64_t> chain,
                const routing::DispatchDomain& domain) {
              outbox->Add(router->fleet().backend(b).name, chain, domain);
            });
      }
      gateway.feeds.resize(n);
      gateway.in_transit.resize(n);
      gateway.replies_in_transit.resize(n);
      gateways_.push_back(std::move(gateway));
    }
    result_.gateway_requests.assign(gateways_.size(), 0);
    result_.gossip.enabled = gossip_;
    for (int g = 0; gossip_ && g < options_.gateways; ++g) {
      events_.Push(TimePoint{} + options_.gossip->interval * g / options_.gateways,
                   Event{.kind = Event::Kind::kGossipFlush, .gateway = static_cast<uint16_t>(g)});
    }
    result_.prewarm.enabled = options_.prewarm.has_value();
    backend_of_replica_.assign(n, std::nullopt);
    const std::optional<MembershipChange>& change = options_.membership;
    for (uint32_t i = 0; i < n; ++i) {
      if (change && change->kind == MembershipChange::Kind::kAdd && change->replica == i) continue;
      AddBackend(i);
    }
    return absl::OkStatus();
  }

  // `publish`: the engine publishes KV events to the router (precise mode's fleet); else it
  // emits none (the router is not subscribed).
  void AddReplica(const engine::EngineConfig& config, const engine::TimingProfile& profile,
                  bool publish) {
    Replica replica;
    const uint64_t index = replicas_.size();
    engine::EngineConfig engine_config = config;
    engine_config.emit_kv_events = publish;
    // The feed's writer rejects another block size; every replica's must be the keys' one.
    if (publish && engine_config.block_size != block_size_) std::abort();
    replica.core = std::make_unique<engine::EngineCore>(engine_config, profile, generator_,
                                                        Mix64(options_.seed + index));
    replicas_.push_back(std::move(replica));
  }

  void EnableInfiniteBound(int block_size) {
    bound_ = std::make_unique<InfiniteCacheBound>(block_size);
  }

  // Fleet runs: InvalidArgument when a membership change comes no earlier than the last arrival
  // (no request would be routed after it). The pooled bound does not check: it has no fleet to
  // change, and a closed-loop stream may end at another time there.
  absl::StatusOr<RunResult> Run();

 private:
  TimePoint now() const { return clock_.Now(); }
  bool fleet() const { return !gateways_.empty(); }
  // The gateway a new request reaches (SimOptions::gateway_assignment).
  uint16_t PickGateway(const workload::WorkloadRequest& request);
  // Every gateway scrapes replica r from `from` on, each at its own phase.
  void ScheduleScrapes(uint32_t r, TimePoint from);
  void Pull();
  void OnArrival(workload::WorkloadRequest request);
  void Handle(const Event& event);
  void StartStep(uint32_t r);
  void OnStepEnd(uint32_t r);
  void OnFinishSeen(const Event& event);
  void OnFailSeen(const Event& event);
  void OnSeriesTick();
  // Router::AddBackend for replica r, named "r<index>" whatever its backend id.
  void AddBackend(uint32_t r);
  void ApplyMembershipChange();
  // Sends what the gateways' prewarm planners release now, and schedules a tick while any has
  // jobs pending.
  void SendPrewarm();
  // A prewarm request ended (finished: cached tokens known; else failed).
  void EndPrewarm(const Flight& flight, uint64_t id, std::optional<int64_t> cached, int64_t prompt);
  void CountHit(TimePoint arrival, int64_t prompt, int64_t cached);
  // Precise mode: replica r's step produced KV events: one message to every gateway, maybe lost
  // on its way to each.
  void Publish(uint32_t r);
  // After feeding gateway g's feed of replica r: apply to its router, send its replay requests.
  void AfterFeed(uint16_t g, uint32_t r);
  void OnKvEventSeen(const Event& event);
  void OnReplayAtReplica(const Event& event);
  void OnReplaySeen(const Event& event);
  // SimOptions::gossip: gateway g sends its outbox to every other gateway.
  void FlushGossip(uint16_t g);

  const SimOptions& options_;
  std::unique_ptr<workload::Workload> workload_;
  request::BuiltinTokenizer tokenizer_;
  engine::TokenGenerator generator_;
  const bool precise_;
  const int block_size_;
  const Duration event_delay_;
  RequestPreparer preparer_;
  Rng loss_rng_;
  Rng gateway_rng_;
  Rng gossip_rng_;
  const bool gossip_;
  ManualClock clock_;
  std::vector<Gateway> gateways_;
  std::unique_ptr<InfiniteCacheBound> bound_;
  std::vector<Replica> replicas_;
  EventQueue<Event> events_;
  EventQueue<workload::WorkloadRequest> arrivals_;
  absl::flat_hash_map<uint64_t, Flight> flights_;
  // Router backend ids and replica indices differ once a change adds a replica: the one added
  // gets the next id. nullopt: the replica is not (or no longer) a backend of the routers. Every
  // gateway adds and removes the same backends in the same order, so the ids are the same in
  // every router.
  std::vector<std::optional<routing::BackendId>> backend_of_replica_;
  std::vector<uint32_t> replica_of_backend_;
  bool membership_applied_ = false;
  bool prewarm_tick_scheduled_ = false;
  uint64_t next_prewarm_id_ = uint64_t{1} << 62;  // above every workload request id
  TimePoint last_arrival_{};
  RunResult result_;
};

void EventLoop::AddBackend(uint32_t r) {
  const routing::BackendId id = static_cast<routing::BackendId>(replica_of_backend_.size());
  for (Gateway& gateway : gateways_) {
    // Broken invariant, not input: the Router hands out dense ids 0, 1, ... in order.
    if (gateway.router->AddBackend(
            {.name = absl::StrCat("r", r),
             .models = {},
             .kv_capacity_tokens = options_.replicas[r].kv_capacity_tokens}) != id) {
      std::abort();
    }
    if (precise_) {
      gateway.feeds[r] = std::make_unique<kv_events::BackendEventFeed>(
          id,
          kv_events::BackendEventFeedOptions{.block_size = block_size_,
                                             .dp_ranks = 1,
                                             .stream = {.replay_configured = options_.event_replay},
                                             .max_blocks_per_backend = size_t{1} << 22});
    }
  }
  replica_of_backend_.push_back(r);
  backend_of_replica_[r] = id;
}

void EventLoop::ScheduleScrapes(uint32_t r, TimePoint from) {
  const auto n = static_cast<int64_t>(options_.replicas.size());
  const int64_t gateways = options_.gateways;
  for (int64_t g = 0; g < gateways; ++g) {
    const Duration phase = options_.scrape_interval * (r * gateways + g) / (n * gateways);
    events_.Push(
        from + phase,
        Event{.kind = Event::Kind::kScrape, .gateway = static_cast<uint16_t>(g), .replica = r});
  }
}

uint16_t EventLoop::PickGateway(const workload::WorkloadRequest& request) {
  const auto n = static_cast<uint64_t>(options_.gateways);
  if (n == 1) return 0;
  if (options_.gateway_assignment == SimOptions::GatewayAssignment::kAffinity &&
      request.session != 0) {
    return static_cast<uint16_t>(Mix64(request.session ^ options_.seed) % n);
  }
  return static_cast<uint16_t>(gateway_rng_.UniformInt(n));
}

// The gateway's admin API: POST /admin/backends is Router::AddBackend (and its scraper starts
// polling the new backend); DELETE /admin/backends/{name} is Router::RemoveBackend, after which
// the removed engine finishes what it has (its events still reach the router, which ignores them
// for the index) and is no longer scraped.
void EventLoop::ApplyMembershipChange() {
  const MembershipChange& change = *options_.membership;
  membership_applied_ = true;
  result_.membership = change;
  if (!fleet()) return;  // the pooled bound has no fleet to change
  if (change.kind == MembershipChange::Kind::kAdd) {
    AddBackend(change.replica);
    for (Gateway& gateway : gateways_) {
      if (gateway.prewarm) {
        gateway.prewarm->PlanJoin(*gateway.router, *backend_of_replica_[change.replica], now());
      }
    }
    // Scraped at once by the first gateway; the others follow at their phases.
    ScheduleScrapes(change.replica, now() - options_.scrape_interval * change.replica /
                                                static_cast<int64_t>(options_.replicas.size()));
  } else {
    for (Gateway& gateway : gateways_) {
      const routing::BackendId leaving = *backend_of_replica_[change.replica];
      if (gateway.prewarm) gateway.prewarm->PlanHandoff(*gateway.router, leaving, now());
      gateway.router->RemoveBackend(leaving);
    }
    backend_of_replica_[change.replica].reset();
    // Its feeds stay (their counters are reported) but are fed no more: the gateways unsubscribe.
  }
  SendPrewarm();
}

void EventLoop::SendPrewarm() {
  bool pending = false;
  for (size_t g = 0; g < gateways_.size(); ++g) {
    Gateway& gateway = gateways_[g];
    if (!gateway.prewarm) continue;
    while (std::optional<Prewarm::Job> job = gateway.prewarm->Next(*gateway.router, now())) {
      const uint64_t id = next_prewarm_id_++;
      job->request.id = id;
      absl::StatusOr<routing::Decision> decision = gateway.router->Route(job->request);
      if (!decision.ok()) {
        gateway.prewarm->OnDone(*job);
        ++result_.prewarm.failed;
        continue;
      }
      gateway.router->CommitInsert(id);
      engine::EngineRequest request = job->payload;
      request.id = id;
      request.max_tokens = 1;
      const uint32_t replica = replica_of_backend_[decision->backend];
      flights_.emplace(id, Flight{.arrival = now(),
                                  .gateway = static_cast<uint16_t>(g),
                                  .replica = replica,
                                  .seed = request.seed,
                                  .first_token_seen = false,
                                  .prewarm = job->reason,
                                  .predicted_cached = decision->predicted_cached_tokens,
                                  .pending = std::move(request)});
      gateway.prewarm_sent.emplace(id, *std::move(job));
      events_.Push(now() + options_.network_delay,
                   Event{.kind = Event::Kind::kDeliver, .replica = replica, .id = id});
    }
    pending = pending || gateway.prewarm->pending() > 0;
  }
  // Pacing: look again shortly while jobs wait (a token bucket refill, a target's queue).
  if (pending && !prewarm_tick_scheduled_) {
    prewarm_tick_scheduled_ = true;
    events_.Push(now() + std::chrono::milliseconds(50), Event{.kind = Event::Kind::kPrewarmTick});
  }
}

void EventLoop::EndPrewarm(const Flight& flight, uint64_t id, std::optional<int64_t> cached,
                           int64_t prompt) {
  Gateway& gateway = gateways_[flight.gateway];
  if (cached) {
    gateway.router->OnFinished(id, *cached);
    ++result_.prewarm.finished;
    ++(*flight.prewarm == routing::PrewarmReason::kJoin ? result_.prewarm.join
                                                        : result_.prewarm.handoff);
    result_.prewarm.prompt_tokens += prompt;
    result_.prewarm.cached_tokens += *cached;
  } else {
    gateway.router->OnFailed(id);
    ++result_.prewarm.failed;
  }
  auto sent = gateway.prewarm_sent.find(id);
  gateway.prewarm->OnDone(sent->second);
  gateway.prewarm_sent.erase(sent);
  SendPrewarm();
}

void EventLoop::CountHit(TimePoint arrival, int64_t prompt, int64_t cached) {
  const Duration window = options_.hit_window;
  const Duration origin = options_.membership ? options_.membership->at % window : Duration(0);
  const Duration since = arrival - TimePoint{};
  if (since < origin) return;
  const auto k = static_cast<size_t>((since - origin) / window);
  HitRateSeries& series = result_.hit_series;
  if (series.size() <= k) {
    series.requests.resize(k + 1, 0);
    series.prompt_tokens.resize(k + 1, 0);
    series.cached_tokens.resize(k + 1, 0);
  }
  ++series.requests[k];
  series.prompt_tokens[k] += prompt;
  series.cached_tokens[k] += cached;
}

void EventLoop::Pull() {
  std::optional<workload::WorkloadRequest> next = workload_->Next();
  if (!next) return;
  // Arrivals are offsets from the start (time zero); a follow-up turn is never in the past.
  const TimePoint at = std::max(now(), TimePoint{} + next->arrival);
  arrivals_.Push(at, *std::move(next));
}

absl::StatusOr<RunResult> EventLoop::Run() {
  const size_t n = replicas_.size();
  result_.replicas.assign(n, ReplicaTotals{});
  result_.series.interval_s = ToSeconds(options_.series_interval);
  result_.series.queue.assign(n, {});
  result_.series.prefill_tps.assign(n, {});
  result_.hit_series.window_s = ToSeconds(options_.hit_window);
  if (options_.membership) {
    result_.hit_series.origin_s = ToSeconds(options_.membership->at % options_.hit_window);
    events_.Push(TimePoint{} + options_.membership->at, Event{.kind = Event::Kind::kMembership});
  }
  for (size_t i = 0; i < n && fleet(); ++i) {
    if (backend_of_replica_[i]) ScheduleScrapes(static_cast<uint32_t>(i), TimePoint{});
  }  // the replica a membership change adds: scraped once added
  events_.Push(TimePoint{} + options_.series_interval, Event{.kind = Event::Kind::kSeriesTick});

  Pull();
  while (true) {
    if (arrivals_.empty() && flights_.empty()) {
      Pull();
      if (arrivals_.empty()) break;  // done (or a closed loop waiting on nothing)
    }
    if (!arrivals_.empty() && (events_.empty() || arrivals_.TopTime() <= events_.TopTime())) {
      auto [at, request] = arrivals_.Pop();
      clock_.Set(at);
      OnArrival(std::move(request));
      if (arrivals_.empty()) Pull();
    } else {
      auto [at, event] = events_.Pop();
      clock_.Set(at);
      Handle(event);
    }
  }
  if (fleet() && options_.membership &&
      (!membership_applied_ || TimePoint{} + options_.membership->at >= last_arrival_)) {
    return InvalidParam(
        "membership",
        absl::StrFormat("--membership: the change at %g s is not before the last arrival at "
                        "%.1f s, so no request would be routed after it; choose an earlier time or "
                        "more requests",
                        ToSeconds(options_.membership->at),
                        ToSeconds(last_arrival_ - TimePoint{})));
  }
  {  // keep whole windows only: those that end by the last arrival
    HitRateSeries& series = result_.hit_series;
    const double whole =
        std::floor((ToSeconds(last_arrival_ - TimePoint{}) - series.origin_s) / series.window_s);
    const size_t keep = std::min(series.size(), static_cast<size_t>(std::max(0.0, whole)));
    series.requests.resize(keep);
    series.prompt_tokens.resize(keep);
    series.cached_tokens.resize(keep);
  }
  for (const Gateway& gateway : gateways_) {
    if (gateway.prewarm) result_.prewarm.planner += gateway.prewarm->counters();
    if (gateway.receiver) result_.gossip.placements += gateway.receiver->counters().placements;
    const routing::RouterStats& s = gateway.router->stats();
    routing::RouterStats& sum = result_.router;
    sum.routed += s.routed;
    sum.predicted_cached_tokens += s.predicted_cached_tokens;
    sum.reported_cached_tokens += s.reported_cached_tokens;
    sum.corrections += s.corrections;
    sum.underpredictions += s.underpredictions;
    sum.rerouted += s.rerouted;
    sum.failed += s.failed;
    for (const auto& feed : gateway.feeds) {
      if (feed == nullptr) continue;
      const kv_events::FeedCounters& c = feed->counters();
      RunResult::KvEventTotals& totals = result_.kv_events;
      totals.applied += c.applied;
      totals.replayed += c.replayed;
      totals.missed += c.missed;
      totals.replays_requested += c.replays_requested;
      totals.rebuilds += c.rebuilds;
      totals.unattributed_blocks += feed->writer_counters().unattributed_blocks;
      totals.fleet_attributed_blocks += feed->writer_counters().fleet_attributed_blocks;
    }
  }
  if (bound_ != nullptr) {
    result_.infinite_prompt_tokens = bound_->prompt_tokens();
    result_.infinite_hit_tokens = bound_->hit_tokens();
  }
  return std::move(result_);
}

void EventLoop::OnArrival(workload::WorkloadRequest request) {
  const uint64_t id = request.id;
  PreparedRequest prepared = preparer_.Prepare(request);
  if (result_.arrived == 0) result_.first_arrival_s = ToSeconds(now() - TimePoint{});
  ++result_.arrived;
  last_arrival_ = now();
  if (bound_ != nullptr) {
    bound_->Observe(prepared.engine.prompt_tokens, prepared.engine.root_hash, generator_,
                    prepared.engine.seed, prepared.engine.max_tokens);
  }
  uint32_t replica = 0;
  uint16_t g = 0;
  int64_t predicted_cached = 0;
  if (fleet()) {
    g = PickGateway(request);
    ++result_.gateway_requests[g];
    routing::Router& router = *gateways_[g].router;
    absl::StatusOr<routing::Decision> decision = router.Route(prepared.routing);
    if (!decision.ok()) {
      ++result_.failed;
      workload_->OnResponse(id, "", now() - TimePoint{});
      Pull();
      return;
    }
    if (precise_) {  // as a precise-mode gateway does right after Route
      router.SetDispatchDomain(
          id, routing::DomainOfTokenPrompt(prepared.routing.model, prepared.routing.tenant, "",
                                           prepared.engine.prompt_tokens, block_size_));
      if (router.fleet().backend(decision->backend).kv_events ==
          routing::KvEventState::kUncertain) {
        ++result_.kv_events.routed_uncertain;
      }
    }
    router.CommitInsert(prepared.routing.id);  // as the gateway does once it has dispatched
    if (gateways_[g].prewarm) {
      gateways_[g].prewarm->Observe(prepared.routing, prepared.engine, now());
    }
    replica = replica_of_backend_[decision->backend];
    predicted_cached = decision->predicted_cached_tokens;
    ++result_.reasons[std::string(routing::ReasonName(decision->reason))];
  }
  ++result_.replicas[replica].requests;
  if (membership_applied_) ++result_.replicas[replica].requests_after_change;
  Flight flight{.arrival = now(),
                .gateway = g,
                .replica = replica,
                .seed = prepared.engine.seed,
                .first_token_seen = false,
                .prewarm = std::nullopt,
                .predicted_cached = predicted_cached,
                .pending = std::move(prepared.engine)};
  flights_.emplace(id, std::move(flight));
  events_.Push(now() + options_.network_delay,
               Event{.kind = Event::Kind::kDeliver, .replica = replica, .id = id});
}

void EventLoop::Handle(const Event& event) {
  switch (event.kind) {
    case Event::Kind::kDeliver: {
      Flight& flight = flights_.at(event.id);
      Replica& replica = replicas_[event.replica];
      if (absl::Status s = replica.core->Add(std::move(flight.pending)); !s.ok()) {
        events_.Push(
            now() + options_.network_delay,
            Event{.kind = Event::Kind::kFailSeen, .replica = event.replica, .id = event.id});
        return;
      }
      if (!replica.stepping) StartStep(event.replica);
      return;
    }
    case Event::Kind::kStepEnd:
      OnStepEnd(event.replica);
      return;
    case Event::Kind::kFirstTokenSeen: {
      Flight& flight = flights_.at(event.id);
      if (fleet()) gateways_[flight.gateway].router->OnFirstToken(event.id);
      if (flight.prewarm) return;  // not client traffic
      const double ttft_s = ToSeconds(now() - flight.arrival);
      result_.ttft_s.Add(ttft_s);
      if (options_.membership) {
        const TimePoint change = TimePoint{} + options_.membership->at;
        if (flight.arrival >= change - kChangeSpan && flight.arrival < change) {
          result_.ttft_before_change_s.Add(ttft_s);
        } else if (flight.arrival >= change && flight.arrival < change + kChangeSpan) {
          result_.ttft_after_change_s.Add(ttft_s);
        }
      }
      return;
    }
    case Event::Kind::kFinishSeen:
      OnFinishSeen(event);
      return;
    case Event::Kind::kFailSeen:
      OnFailSeen(event);
      return;
    case Event::Kind::kScrape: {
      if (!backend_of_replica_[event.replica]) return;  // removed: no longer scraped
      if (precise_) {  // the feed's timers (replay timeout, end of a rebuild), at scrape pace
        gateways_[event.gateway].feeds[event.replica]->Tick(now());
        AfterFeed(event.gateway, event.replica);
      }
      const engine::EngineStats stats = replicas_[event.replica].core->Stats();
      events_.Push(now() + options_.network_delay, Event{.kind = Event::Kind::kMetricsSeen,
                                                         .gateway = event.gateway,
                                                         .replica = event.replica,
                                                         .a = stats.num_running,
                                                         .b = stats.num_waiting,
                                                         .x = stats.kv_cache_usage,
                                                         .scraped_at = now()});
      events_.Push(now() + options_.scrape_interval, event);
      return;
    }
    case Event::Kind::kMetricsSeen: {
      const std::optional<routing::BackendId> backend = backend_of_replica_[event.replica];
      if (!backend) return;  // removed while the scrape was on its way
      gateways_[event.gateway].router->OnMetrics(
          *backend, routing::EngineMetricsSample{.num_running = event.a,
                                                 .num_waiting = event.b,
                                                 .kv_usage = event.x,
                                                 .scraped_at = event.scraped_at});
      return;
    }
    case Event::Kind::kSeriesTick:
      OnSeriesTick();
      events_.Push(now() + options_.series_interval, event);
      return;
    case Event::Kind::kMembership:
      ApplyMembershipChange();
      return;
    case Event::Kind::kPrewarmTick:
      prewarm_tick_scheduled_ = false;
      SendPrewarm();
      return;
    case Event::Kind::kKvEventSeen:
      OnKvEventSeen(event);
      return;
    case Event::Kind::kReplayAtReplica:
      OnReplayAtReplica(event);
      return;
    case Event::Kind::kReplaySeen:
      OnReplaySeen(event);
      return;
    case Event::Kind::kGossipFlush:
      FlushGossip(event.gateway);
      events_.Push(now() + options_.gossip->interval, event);
      return;
    case Event::Kind::kGossipSeen: {
      Gateway& gateway = gateways_[event.gateway];
      const std::string datagram = std::move(gateway.gossip_in_transit.front());
      gateway.gossip_in_transit.pop_front();
      // Broken invariant, not input: every message is one a peer encoded.
      if (!gateway.receiver->OnDatagram(datagram, now(), *gateway.router).ok()) std::abort();
      return;
    }
  }
}

void EventLoop::FlushGossip(uint16_t g) {
  Gateway& gateway = gateways_[g];
  gateway.receiver->Tick(now(), *gateway.router);
  for (std::string& datagram : gateway.outbox->Take(routing::OwnLoad(*gateway.router))) {
    for (size_t h = 0; h < gateways_.size(); ++h) {
      if (h == g) continue;
      ++result_.gossip.messages;
      result_.gossip.bytes += static_cast<int64_t>(datagram.size());
      if (options_.gossip->loss > 0 && gossip_rng_.Uniform() < options_.gossip->loss) {
        ++result_.gossip.lost;
        continue;
      }
      gateways_[h].gossip_in_transit.push_back(datagram);
      events_.Push(now() + options_.network_delay,
                   Event{.kind = Event::Kind::kGossipSeen, .gateway = static_cast<uint16_t>(h)});
    }
  }
}

void EventLoop::Publish(uint32_t r) {
  Replica& replica = replicas_[r];
  const uint64_t seq = replica.next_seq++;
  std::string payload =
      kv_events::EncodeKvEventBatch(ToSeconds(now() - TimePoint{}), replica.step.kv_events,
                                    /*data_parallel_rank=*/0, kv_events::KvEventEncoding::kMap);
  ++result_.kv_events.published;
  // Every message consumes a sequence number and enters the replay buffer, delivered or not.
  if (options_.event_replay) {
    replica.replay_buffer.emplace_back(seq, payload);
    if (replica.replay_buffer.size() > options_.replay_buffer_steps) {
      replica.replay_buffer.pop_front();
    }
  }
  // ZMQ's PUB socket sends to each subscriber on its own; a drop (a subscriber's full queue)
  // loses the message for that subscriber only.
  for (size_t g = 0; g < gateways_.size(); ++g) {
    if (options_.event_loss > 0 && loss_rng_.Uniform() < options_.event_loss) {
      ++result_.kv_events.lost;
      continue;
    }
    gateways_[g].in_transit[r].emplace_back(
        seq, g + 1 < gateways_.size() ? payload : std::move(payload));
    events_.Push(now() + event_delay_, Event{.kind = Event::Kind::kKvEventSeen,
                                             .gateway = static_cast<uint16_t>(g),
                                             .replica = r,
                                             .id = seq});
  }
}

void EventLoop::AfterFeed(uint16_t g, uint32_t r) {
  kv_events::BackendEventFeed& feed = *gateways_[g].feeds[r];
  feed.ApplyTo(*gateways_[g].router);
  for (const kv_events::ReplayRequest& request : feed.TakeReplayRequests()) {
    events_.Push(now() + options_.network_delay, Event{.kind = Event::Kind::kReplayAtReplica,
                                                       .gateway = g,
                                                       .replica = r,
                                                       .id = request.from_seq});
  }
}

void EventLoop::OnKvEventSeen(const Event& event) {
  Gateway& gateway = gateways_[event.gateway];
  std::deque<Message>& in_transit = gateway.in_transit[event.replica];
  const Message message = std::move(in_transit.front());
  in_transit.pop_front();
  if (!backend_of_replica_[event.replica]) return;  // removed: unsubscribed
  gateway.feeds[event.replica]->OnLive(message.first, message.second, now());
  AfterFeed(event.gateway, event.replica);
}

// vLLM's replay endpoint answers with every buffered message from the requested one on (from
// the oldest it still has when the request is older), then the end marker.
void EventLoop::OnReplayAtReplica(const Event& event) {
  const Replica& replica = replicas_[event.replica];
  std::vector<Message> reply;
  for (const auto& [seq, payload] : replica.replay_buffer) {
    if (seq >= event.id) reply.emplace_back(seq, payload);
  }
  gateways_[event.gateway].replies_in_transit[event.replica].push_back(std::move(reply));
  events_.Push(
      now() + event_delay_,
      Event{.kind = Event::Kind::kReplaySeen, .gateway = event.gateway, .replica = event.replica});
}

void EventLoop::OnReplaySeen(const Event& event) {
  Gateway& gateway = gateways_[event.gateway];
  std::deque<std::vector<Message>>& replies = gateway.replies_in_transit[event.replica];
  const std::vector<Message> reply = std::move(replies.front());
  replies.pop_front();
  if (!backend_of_replica_[event.replica]) return;
  kv_events::BackendEventFeed& feed = *gateway.feeds[event.replica];
  for (const auto& [seq, payload] : reply) feed.OnReplayed(seq, payload, now());
  feed.OnReplayed(kv_events::kEndOfReplay, "", now());
  AfterFeed(event.gateway, event.replica);
}

void EventLoop::StartStep(uint32_t r) {
  Replica& replica = replicas_[r];
  replica.core->Step(&replica.step);  // reuses the step's event vectors
  replica.stepping = true;
  ReplicaTotals& totals = result_.replicas[r];
  ++totals.steps;
  totals.busy_s += ToSeconds(replica.step.duration);
  totals.prefill_tokens += replica.step.shape.prefill_tokens;
  replica.prefill_since_tick += replica.step.shape.prefill_tokens;
  events_.Push(now() + replica.step.duration, Event{.kind = Event::Kind::kStepEnd, .replica = r});
}

void EventLoop::OnStepEnd(uint32_t r) {
  Replica& replica = replicas_[r];
  const TimePoint seen = now() + options_.network_delay;
  for (const engine::RequestEvent& e : replica.step.events) {
    switch (e.kind) {
      case engine::RequestEvent::Kind::kToken:
        if (e.output_index == 0) {
          Flight& flight = flights_.at(e.id);
          if (!flight.first_token_seen) {
            flight.first_token_seen = true;
            events_.Push(seen,
                         Event{.kind = Event::Kind::kFirstTokenSeen, .replica = r, .id = e.id});
          }
        }
        break;
      case engine::RequestEvent::Kind::kFinished:
        events_.Push(seen, Event{.kind = Event::Kind::kFinishSeen,
                                 .replica = r,
                                 .id = e.id,
                                 .a = e.cached_tokens,
                                 .b = e.output_index,
                                 .x = static_cast<double>(e.prompt_tokens)});
        break;
      case engine::RequestEvent::Kind::kPreempted:
        ++result_.replicas[r].preemptions;
        break;
    }
  }
  replica.step.events.clear();
  // The step's KV events are published as it ends (vLLM publishes after the scheduler step).
  if (!replica.step.kv_events.empty()) {
    if (precise_ && fleet()) Publish(r);
    replica.step.kv_events.clear();
  }
  if (replica.core->HasWork()) {
    StartStep(r);
  } else {
    replica.stepping = false;
  }
}

void EventLoop::OnFinishSeen(const Event& event) {
  auto it = flights_.find(event.id);
  const Flight& flight = it->second;
  const int64_t cached = event.a;
  const int64_t generated = event.b;
  const int64_t prompt = static_cast<int64_t>(event.x);
  if (flight.prewarm) {
    EndPrewarm(flight, event.id, cached, prompt);
    flights_.erase(event.id);
    return;
  }
  if (fleet()) {
    gateways_[flight.gateway].router->OnFinished(event.id, cached);
    if (prompt > 0) {
      result_.index_error_sum += static_cast<double>(std::abs(flight.predicted_cached - cached)) /
                                 static_cast<double>(prompt);
      ++result_.index_error_requests;
    }
  }
  ++result_.finished;
  result_.prompt_tokens += prompt;
  result_.cached_tokens += cached;
  result_.generated_tokens += generated;
  ReplicaTotals& totals = result_.replicas[flight.replica];
  totals.prompt_tokens += prompt;
  totals.cached_tokens += cached;
  totals.generated_tokens += generated;
  result_.e2e_s.Add(ToSeconds(now() - flight.arrival));
  CountHit(flight.arrival, prompt, cached);
  result_.last_finish_s = ToSeconds(now() - TimePoint{});
  const uint64_t seed = flight.seed;
  flights_.erase(it);
  workload_->OnResponse(event.id, AnswerText(generator_, seed, generated), now() - TimePoint{});
  Pull();
}

void EventLoop::OnFailSeen(const Event& event) {
  const uint64_t id = event.id;
  if (const Flight& flight = flights_.at(id); flight.prewarm) {
    EndPrewarm(flight, id, std::nullopt, 0);
    flights_.erase(id);
    return;
  }
  if (fleet()) gateways_[flights_.at(id).gateway].router->OnFailed(id);
  ++result_.failed;
  flights_.erase(id);
  workload_->OnResponse(id, "", now() - TimePoint{});
  Pull();
}

void EventLoop::OnSeriesTick() {
  const double interval_s = ToSeconds(options_.series_interval);
  for (size_t r = 0; r < replicas_.size(); ++r) {
    Replica& replica = replicas_[r];
    const engine::EngineStats stats = replica.core->Stats();
    result_.series.queue[r].push_back(static_cast<float>(stats.num_running + stats.num_waiting));
    result_.series.prefill_tps[r].push_back(
        static_cast<float>(static_cast<double>(replica.prefill_since_tick) / interval_s));
    replica.prefill_since_tick = 0;
  }
}

}  // namespace

absl::StatusOr<RunResult> SimulateFleet(const SimOptions& options,
                                        const PolicyFactory& make_policy) {
  WR_RETURN_IF_ERROR(ValidateOptions(options));
  WR_ASSIGN_OR_RETURN(std::unique_ptr<workload::Workload> workload,
                      workload::MakeWorkload(options.workload, options.seed));
  EventLoop loop(options, std::move(workload), "");
  for (const ReplicaSpec& spec : options.replicas) {
    loop.AddReplica(engine::DefaultEngineConfig(*spec.profile, spec.kv_capacity_tokens),
                    *spec.profile, options.prefix_mode == SimOptions::PrefixMode::kPrecise);
  }
  WR_RETURN_IF_ERROR(loop.AddGateways(make_policy));
  return loop.Run();
}

absl::StatusOr<RunResult> SimulateFleet(const SimOptions& options,
                                        std::unique_ptr<routing::Policy> policy) {
  if (options.gateways != 1) {
    return InvalidParam("gateways", "one policy instance serves one gateway: give a PolicyFactory");
  }
  return SimulateFleet(options, [&]() -> absl::StatusOr<std::unique_ptr<routing::Policy>> {
    return std::move(policy);
  });
}

absl::StatusOr<RunResult> SimulatePooled(const SimOptions& options, bool infinite_bound) {
  WR_RETURN_IF_ERROR(ValidateOptions(options));
  WR_ASSIGN_OR_RETURN(std::unique_ptr<workload::Workload> workload,
                      workload::MakeWorkload(options.workload, options.seed));
  const int64_t n = static_cast<int64_t>(options.replicas.size());
  const double scale = static_cast<double>(n);
  engine::TimingProfile profile = *options.replicas[0].profile;
  profile.per_prefill_token_s /= scale;
  profile.per_decode_seq_s /= scale;
  profile.per_context_token_s /= scale;
  int64_t total_kv_tokens = 0;
  for (const ReplicaSpec& spec : options.replicas) total_kv_tokens += spec.kv_capacity_tokens;
  engine::EngineConfig config = engine::DefaultEngineConfig(profile, total_kv_tokens);
  config.max_num_batched_tokens *= n;
  config.max_num_seqs *= n;

  EventLoop loop(options, std::move(workload), "pooled-cache bound");
  loop.AddReplica(config, profile,
                  /*publish=*/false);  // `profile` outlives the loop's engines: Run() returns first
  if (infinite_bound) loop.EnableInfiniteBound(config.block_size);
  return loop.Run();
}

}  // namespace warmroute::sim
