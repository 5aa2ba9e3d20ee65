// Prewarm and handoff planning: so that a replica that joins the fleet starts warm and one that
// leaves takes no burst of cold prefills with it. Sans-I/O: the caller (the simulator's event
// loop; the gateway's Prewarmer, gateway/fleet/prewarmer.h) feeds it the requests it routes and
// the membership changes, asks it for the next request to send, and sends it through the Router
// like any other request.
//
// Rule.
//  1. Hot prefixes. Every client request the caller routes is Observe()d with its payload (what
//     a prewarm request needs to reproduce the prompt: in the simulator the engine request, in
//     the gateway the body as the client sent it, so that the tenant's cache_salt and LoRA stay
//     right). A prefix is identified by the chain hash of the first `id_blocks` blocks of its
//     routing key (its last block when shorter). At most `max_prefixes` prefixes are kept, each
//     with a request rate decayed with a half-life of `half_life` and its most recent request (the
//     longest context of a conversation, the system prompt of a support bot); an unseen prefix
//     that finds the table full replaces the coldest entry and inherits its rate (Space-Saving,
//     Metwally et al. 2005, with decay), so a prefix hotter than the coldest kept one gets in.
//  2. Join (PlanJoin, after Router::AddBackend): for each kept prefix, hottest first, whose first
//     join_homes homes (Router::Homes: the policy's deterministic placement, e.g. warmroute's top
//     max_homes rendezvous homes) include the new backend, a prewarm request to it (reason
//     kJoin): the requests that would go to the new replica as a home — a spill of a hot prefix,
//     a prefix evicted elsewhere — find it warm. One plan sends a target at most
//     `max_fill_fraction` of its KV capacity (when known) in prompt tokens: more would evict what
//     it prewarmed and leave no room for its clients.
//  3. Handoff (PlanHandoff, before Router::RemoveBackend, or with the backend drained): for each
//     kept prefix, hottest first, that the leaving backend holds in the Router's index (at least
//     its id blocks) and no other eligible backend holds, a request to its first home among the
//     backends that stay (reason kHandoff): the prefix is warm where the policy sends it
//     next, instead of being recomputed by the first client request that needs it. The same
//     per-target bound as for a join. Backends that leave together are planned together: none
//     of them counts as holding a prefix for the others, nor is a home.
//  4. Pacing (Next): jobs go out hottest first, each only when
//       - fewer than `max_in_flight` prewarm requests are in flight (and none on its target),
//       - the target's outstanding prefill (the Router's FleetView) is at most
//         `max_target_queue_tokens`: prewarm fills idle prefill capacity, it does not queue
//         ahead of client requests,
//       - a token bucket of `max_tokens_per_s` prompt tokens (burst: one second's worth, or one
//         job) has tokens left;
//     a job whose target is gone, or that the index shows already holds the prefix (a client
//     request got there first), is dropped; one that waited longer than `max_wait` is dropped
//     (the fleet has moved on). A job waiting on a busy target does not hold back the others.
//  Each job's request is pinned to its target (Placement::kPinned), max_tokens 1, not streamed:
//  the caller Routes it like any request (so the Router's index learns the target holds the
//  prefix), but does not count it as client traffic (hit rate, latency).
//
// Parameters (defaults, and why):
//   max_prefixes             1024    prefixes kept (and their sample requests: prompts are in
//                                    memory only, never logged; ~12 MB for 1,024 prompts of
//                                    3,000 tokens). support-bot with 1,000 system prompts (Zipf
//                                    0.6), one of 8 replicas removed: the hit-rate drop in the
//                                    minute after is 6.6 pp with 64, 5.8 with 256, 3.7 with 1,024
//                                    (7.0 without prewarm; docs/prewarm.md): a prefix not kept
//                                    cannot be handed off
//   max_tokens_per_s         20000   prompt tokens per second of prewarm, fleet-wide: about 1.5
//                                    replicas' prefill rate of Llama-3.1-70B TP4 on H100
//                                    (80 us per token, timing_model.cc)
//   max_in_flight            4       prewarm requests in flight, fleet-wide (one per target)
//   max_target_queue_tokens  2048    a job waits while its target has more prefill outstanding:
//                                    a quarter of a vLLM step's 8,192-token budget
//   id_blocks                64      blocks identifying a prefix: warmroute's home_blocks (64 x 64
//                                    characters, ~1,000 tokens), deeper than a chat template's
//                                    shared header and the Mooncake trace's shared first block
//   half_life                60 s    of a prefix's request rate
//   max_wait                 60 s    a job older than this is dropped
//   max_fill_fraction        0.5     of a target's KV capacity one plan may fill: half for
//                                    prewarm, the rest for its clients' own prefixes and decodes
//   sample_refresh           0       a prefix's sample is replaced by a request at least this much
//                                    later (the gateway: 10 s, so that the body is copied now and
//                                    then, not per request)
//   min_sample_requests      1       a prefix is first sampled at its n-th request (the gateway: 2,
//                                    so that a prompt seen once, no hot prefix, is never copied)
//   join_homes               3       a join prewarms the prefixes whose first join_homes homes
//                                    include the new backend (warmroute's max_homes: every home
//                                    a hot prefix may spill to); 0: no prewarm on a join
//
// Usage:
//   PrewarmPlanner<std::string> planner(PrewarmOptions{});
//   planner.Observe(request, body, now);                       // every routed client request
//   router.AddBackend(spec); planner.PlanJoin(router, id, now);
//   planner.PlanHandoff(router, leaving, now); router.RemoveBackend(leaving);
//   while (auto job = planner.Next(router, now)) { ...Route job->request, send... }
//   planner.OnDone(*job);                                      // finished or failed
//
// Thread-safety: none; one owner (the Router's).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "common/clock.h"
#include "core/routing/policy.h"
#include "core/routing/router.h"

namespace warmroute::routing {

struct PrewarmOptions {
  size_t max_prefixes = 1024;
  double max_tokens_per_s = 20000;
  int max_in_flight = 4;
  int64_t max_target_queue_tokens = 2048;
  int id_blocks = 64;
  Duration half_life = std::chrono::seconds(60);
  Duration max_wait = std::chrono::seconds(60);
  double max_fill_fraction = 0.5;
  int join_homes = 3;
  // Count() asks for a new sample of a prefix once its sample is this old (0: every request,
  // as Observe keeps each), and not before the prefix's min_sample_requests-th request since it
  // entered the table (1: its first).
  Duration sample_refresh = Duration::zero();
  int min_sample_requests = 1;
};

enum class PrewarmReason : uint8_t { kJoin, kHandoff };
std::string_view PrewarmReasonName(PrewarmReason reason);

struct PrewarmCounters {
  int64_t planned = 0;
  int64_t sent = 0;
  int64_t sent_tokens = 0;    // prompt tokens of the sent requests (estimated, as routed)
  int64_t dropped_warm = 0;   // the target already held the prefix
  int64_t dropped_gone = 0;   // the target left or stopped being eligible
  int64_t dropped_stale = 0;  // waited longer than max_wait

  // Sums several planners' counters (one per gateway).
  PrewarmCounters& operator+=(const PrewarmCounters& o) {
    planned += o.planned;
    sent += o.sent;
    sent_tokens += o.sent_tokens;
    dropped_warm += o.dropped_warm;
    dropped_gone += o.dropped_gone;
    dropped_stale += o.dropped_stale;
    return *this;
  }
};

// OK, or InvalidArgument naming the first field out of range: max_prefixes <= 1,000,000,
// max_tokens_per_s > 0, max_in_flight >= 1, max_target_queue_tokens >= 0, id_blocks >= 1,
// half_life and max_wait > 0.
absl::Status ValidatePrewarmOptions(const PrewarmOptions& options);

// The id a prefix is kept under: the key's chain hash at block min(id_blocks, size) (0: none).
uint64_t PrewarmPrefixId(const PrefixKey& key, int id_blocks);

template <typename Payload>
class PrewarmPlanner {
 public:
  struct Job {
    uint64_t prefix = 0;
    BackendId target = 0;
    PrewarmReason reason = PrewarmReason::kJoin;
    // Pinned to target, max_tokens 1, stream off; id 0: the caller assigns one.
    RoutingRequest request;
    Payload payload;
    TimePoint planned_at{};
  };

  explicit PrewarmPlanner(PrewarmOptions options) : options_(options) {}
  PrewarmPlanner(const PrewarmPlanner&) = delete;
  PrewarmPlanner& operator=(const PrewarmPlanner&) = delete;

  const PrewarmOptions& options() const { return options_; }
  const PrewarmCounters& counters() const { return counters_; }
  size_t pending() const { return jobs_.size(); }
  int in_flight() const { return static_cast<int>(busy_targets_.size()); }

  // Counts a routed client request and keeps it as its prefix's sample (rule 1).
  void Observe(const RoutingRequest& request, const Payload& payload, TimePoint now) {
    if (Count(request, now)) Keep(request, payload, now);
  }

  // Observe in two steps, for a caller that makes the payload only when it is kept (the
  // gateway: a copy of the body, edited): counts the request in its prefix's rate; true when
  // the prefix has had min_sample_requests requests and has no sample yet or one at least
  // sample_refresh old, so the caller should Keep this request.
  bool Count(const RoutingRequest& request, TimePoint now) {
    const uint64_t id = PrewarmPrefixId(request.key, options_.id_blocks);
    if (id == 0 || options_.max_prefixes == 0) return false;
    auto it = by_id_.find(id);
    size_t slot;
    if (it != by_id_.end()) {
      slot = it->second;
      entries_[slot].rate = Decayed(entries_[slot], now) + 1;
      ++entries_[slot].requests;
    } else if (entries_.size() < options_.max_prefixes) {
      slot = entries_.size();
      entries_.emplace_back();
      entries_.back().rate = 1;
      entries_.back().requests = 1;
      by_id_.emplace(id, slot);
    } else {
      // The coldest entry: the least decayed rate now is the least `score` (no exp2 per entry on
      // the request path).
      slot = 0;
      for (size_t i = 1; i < entries_.size(); ++i) {
        if (entries_[i].score < entries_[slot].score) slot = i;
      }
      const double coldest = Decayed(entries_[slot], now);
      by_id_.erase(entries_[slot].id);
      by_id_.emplace(id, slot);
      entries_[slot].rate = coldest + 1;
      entries_[slot].requests = 1;
      // The evicted prefix's sample goes with it: kept until the slot is sampled again, samples
      // of evicted prefixes would pile up in the slots of unsampled ones (a prompt seen once is
      // never sampled), and the store's memory would grow to max_prefixes samples whatever the
      // traffic, holding prompts the planner no longer knows.
      entries_[slot].sampled = false;
      entries_[slot].request = RoutingRequest{};
      entries_[slot].payload = Payload{};
    }
    Entry& entry = entries_[slot];
    entry.id = id;
    entry.at = now;
    entry.score = std::log2(entry.rate) + ToSeconds(now.time_since_epoch()) /
                                              ToSeconds(options_.half_life);
    if (entry.requests < options_.min_sample_requests) return false;
    return !entry.sampled || now - entry.sampled_at >= options_.sample_refresh;
  }

  // Keeps `request` and `payload` as the sample of its prefix, if the prefix is kept (Count).
  void Keep(const RoutingRequest& request, const Payload& payload, TimePoint now) {
    auto it = by_id_.find(PrewarmPrefixId(request.key, options_.id_blocks));
    if (it == by_id_.end()) return;
    Entry& entry = entries_[it->second];
    entry.request = request;
    entry.payload = payload;
    entry.sampled = true;
    entry.sampled_at = now;
  }

  // Rule 2. REQUIRES: `joined` was just added to `router`.
  void PlanJoin(Router& router, BackendId joined, TimePoint now) {
    planned_tokens_.clear();
    for (size_t slot : Hottest(now)) {
      const Entry& entry = entries_[slot];
      const std::vector<BackendId> homes = router.Homes(entry.request);
      const auto top = homes.begin() + static_cast<std::ptrdiff_t>(std::min(
                                           homes.size(), static_cast<size_t>(options_.join_homes)));
      if (std::find(homes.begin(), top, joined) == top) continue;
      Enqueue(router.fleet(), entry, joined, PrewarmReason::kJoin, now);
    }
  }

  // Rule 3. Call while `router` still knows `leaving` (before RemoveBackend) or once it drains.
  void PlanHandoff(Router& router, BackendId leaving, TimePoint now) {
    PlanHandoff(router, std::span<const BackendId>(&leaving, 1), now);
  }
  // Rule 3 for backends that leave together (the gateway: the data-parallel ranks of one engine
  // server): a prefix any of them holds is handed off when no backend that stays holds it, to
  // its first home among the backends that stay; one plan for them all.
  void PlanHandoff(Router& router, std::span<const BackendId> leaving, TimePoint now) {
    const FleetView& fleet = router.fleet();
    const auto leaves = [&](BackendId b) {
      return std::find(leaving.begin(), leaving.end(), b) != leaving.end();
    };
    // The homes are those the policy gives among the backends that stay (as once they drain):
    // the first homes of a prefix may all be leaving ones (a server's ranks).
    std::vector<bool> was_draining;
    for (BackendId b : leaving) {
      was_draining.push_back(b < fleet.size() && fleet.backend(b).draining);
      router.SetDraining(b, true);
    }
    planned_tokens_.clear();
    for (size_t slot : Hottest(now)) {
      const Entry& entry = entries_[slot];
      const std::vector<int32_t> depth = router.index().Match(entry.request.key.block_hashes);
      const auto holds = [&](BackendId b) {
        return b < depth.size() && depth[b] >= HeldBlocks(entry.request.key);
      };
      if (std::none_of(leaving.begin(), leaving.end(), holds)) continue;
      bool elsewhere = false;
      for (BackendId b = 0; b < fleet.size() && !elsewhere; ++b) {
        elsewhere = !leaves(b) && fleet.backend(b).Eligible() && holds(b);
      }
      if (elsewhere) continue;
      const std::vector<BackendId> homes = router.Homes(entry.request);
      if (!homes.empty()) Enqueue(fleet, entry, homes.front(), PrewarmReason::kHandoff, now);
    }
    for (size_t i = 0; i < leaving.size(); ++i) router.SetDraining(leaving[i], was_draining[i]);
  }

  // The next job to send now under rule 4, or nullopt (none pending, or pacing holds them all
  // back: call again later, e.g. when a prewarm request ends or after a short delay). The caller
  // Routes job->request (with its own id) and calls OnDone(job) when it ends.
  std::optional<Job> Next(const Router& router, TimePoint now) {
    Refill(now);
    if (in_flight() >= options_.max_in_flight || tokens_ <= 0) return std::nullopt;
    const FleetView& fleet = router.fleet();
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      const BackendId target = it->target;
      if (now - it->planned_at > options_.max_wait) {
        ++counters_.dropped_stale;
        it = jobs_.erase(it);
        continue;
      }
      if (target >= fleet.size() || !fleet.backend(target).present ||
          !fleet.backend(target).healthy) {
        ++counters_.dropped_gone;
        it = jobs_.erase(it);
        continue;
      }
      const std::vector<int32_t> depth = router.index().Match(it->request.key.block_hashes);
      if (target < depth.size() && depth[target] >= HeldBlocks(it->request.key)) {
        ++counters_.dropped_warm;
        it = jobs_.erase(it);
        continue;
      }
      if (busy_targets_.contains(target) ||
          fleet.backend(target).outstanding_prefill_tokens > options_.max_target_queue_tokens) {
        ++it;
        continue;
      }
      Job job = std::move(*it);
      jobs_.erase(it);
      busy_targets_.insert(job.target);
      const int64_t tokens = PromptTokens(job.request);
      tokens_ -= static_cast<double>(tokens);
      ++counters_.sent;
      counters_.sent_tokens += tokens;
      return job;
    }
    return std::nullopt;
  }

  // A sent job ended (finished or failed): its target may take another.
  void OnDone(const Job& job) { busy_targets_.erase(job.target); }

 private:
  struct Entry {
    uint64_t id = 0;
    double rate = 0;  // decayed request count as of `at`
    TimePoint at{};
    // log2(rate) + at / half_life: Decayed(now) = 2^(score - now / half_life), so entries order by
    // score as by their decayed rates at any one time.
    double score = 0;
    int64_t requests = 0;  // since it entered the table
    bool sampled = false;  // request and payload hold one of its requests
    TimePoint sampled_at{};
    RoutingRequest request;
    Payload payload{};
  };

  double Decayed(const Entry& entry, TimePoint now) const {
    const double half_lives = ToSeconds(now - entry.at) / ToSeconds(options_.half_life);
    return entry.rate * std::exp2(-std::max(0.0, half_lives));
  }

  // The kept prefixes' slots that have a sample, hottest first (ties: the more recent first).
  std::vector<size_t> Hottest(TimePoint now) const {
    std::vector<std::pair<double, size_t>> order;
    order.reserve(entries_.size());
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i].sampled) order.emplace_back(Decayed(entries_[i], now), i);
    }
    std::sort(order.begin(), order.end(), [&](const auto& x, const auto& y) {
      if (x.first != y.first) return x.first > y.first;
      return entries_[x.second].at > entries_[y.second].at;
    });
    std::vector<size_t> slots;
    slots.reserve(order.size());
    for (const auto& [rate, slot] : order) slots.push_back(slot);
    return slots;
  }

  // Blocks a backend must hold to count as holding the prefix: its id blocks.
  int32_t HeldBlocks(const PrefixKey& key) const {
    return static_cast<int32_t>(
        std::min(key.block_hashes.size(), static_cast<size_t>(std::max(1, options_.id_blocks))));
  }

  // Queues a job unless it would take `target` past max_fill_fraction of its KV capacity in
  // this plan (planned_tokens_).
  void Enqueue(const FleetView& fleet, const Entry& entry, BackendId target, PrewarmReason reason,
               TimePoint now) {
    const int64_t tokens = PromptTokens(entry.request);
    const int64_t capacity = fleet.backend(target).kv_capacity_tokens;
    int64_t& planned = planned_tokens_[target];
    if (capacity > 0 && static_cast<double>(planned + tokens) >
                            options_.max_fill_fraction * static_cast<double>(capacity)) {
      return;
    }
    planned += tokens;
    Job job{.prefix = entry.id,
            .target = target,
            .reason = reason,
            .request = entry.request,
            .payload = entry.payload,
            .planned_at = now};
    job.request.id = 0;
    job.request.placement = Placement::kPinned;
    job.request.pinned = target;
    job.request.max_tokens = 1;
    job.request.stream = false;
    jobs_.push_back(std::move(job));
    ++counters_.planned;
  }

  void Refill(TimePoint now) {
    if (!refilled_at_) {
      tokens_ = options_.max_tokens_per_s;
    } else {
      tokens_ = std::min(options_.max_tokens_per_s,
                         tokens_ + ToSeconds(now - *refilled_at_) * options_.max_tokens_per_s);
    }
    refilled_at_ = now;
  }

  const PrewarmOptions options_;
  std::vector<Entry> entries_;
  absl::flat_hash_map<uint64_t, size_t> by_id_;
  std::deque<Job> jobs_;
  absl::flat_hash_set<BackendId> busy_targets_;
  absl::flat_hash_map<BackendId, int64_t> planned_tokens_;  // by target, in the current plan
  // Token bucket: up to one second's worth; a job may take it below zero (it then waits).
  double tokens_ = 0;
  std::optional<TimePoint> refilled_at_;
  PrewarmCounters counters_;
};

}  // namespace warmroute::routing
