// warmroute: our policy, the default. Locality and load in one unit — predicted time to first
// token — bounded load, and deterministic homes for prefixes, so that independent router replicas
// agree on where a new prefix goes and a hot prefix is replicated on a few chosen backends instead
// of scattered.
//
// Rule, per request (prompt P tokens, a key of K blocks of t tokens each):
//  1. Predicted TTFT of each candidate b, in seconds:
//       cached(b) = PredictedCachedTokens (matched blocks x t, at most P - 1); when b matched the
//                   whole key and the prompt runs on beyond it (the key's depth is bounded),
//                   plus beyond_key_fraction of the unkeyed rest: b likely holds more than the
//                   key can show (Decision.predicted_cached_tokens stays the keyed value)
//       queued(b) = prefill tokens still ahead on b: outstanding_prefill_tokens, reduced by the
//                   time elapsed (prefill_done_at - now, times the rate; at least one step's
//                   overhead while any is outstanding), so a prefill about to finish counts less
//                   than one just sent
//       work(b)   = queued(b) + (P - cached(b))
//       steps(b)  = max(1, ceil(work(b) / step_tokens))
//       T(b) = (work(b) + steps(b) x (step_overhead_tokens
//                                     + decode_context_weight x decode_context_tokens(b)
//                                     + decode_seq_weight x running_decodes(b))) / rate(b)
//     rate(b) is the router's learned prefill rate of b (router.h). Each scheduler step that
//     prefills also runs the backend's decodes, which lengthen it; these per-step costs are in
//     prefill-token equivalents so that they scale with the learned rate (parameters below).
//     Decision.scores carries T(b) for every candidate.
//  2. Choice cost C(b) = T(b) + work_weight x (P - cached(b)) / rate(b): the fleet pays for the
//     prefill a miss causes — every request queued behind it waits for it — not only this
//     request; with work_weight = 1 a miss counts twice its own prefill time.
//  3. Allowed set A: the backends under the in-flight bound
//       in_flight(b) + 1 <= ceil(balance_factor x (total in flight + 1) / n) + balance_abs
//     (bounded-load consistent hashing's rule, plus an absolute margin so that a lightly loaded
//     fleet is not forced to spread), and with C(b) <= C* + slack_s + slack_fraction x C*, C* the
//     lowest cost under the bound. Exempt from the bound: a request whose best match no other
//     request in flight shares (a conversation's own history): moving it would recompute that
//     history to relieve no one; a shared prefix (a system prompt) is what the bound spreads.
//  4. Locality within A: W = the warmest of A, {b in A : cached(b) >= max_A cached - eps},
//     eps = max(useful_match_blocks x t, useful_match_fraction x min(P, K x t)). Matches that
//     differ by less than eps (a short header every backend holds) do not count as locality.
//  5. Within W:
//     - W holds a useful match (>= eps): the earliest available backend of W (the one whose queued
//       prefill ends first; among idle ones, the one idle longest), so a prefix's holders share
//       its load evenly.
//     - A useful match exists but no holder is in A (a hot prefix whose holders are saturated):
//       its next home — the first of its top max_homes homes in rendezvous order that is in W
//       (kSpillHot) — so it spreads over 2, then 3 homes, the same ones for every router; if
//       none is in W, the earliest available of W (kLeastLoad).
//     - No useful match anywhere (a cold prefix): of the backends of W available no later than
//       home_slack_s after the earliest available of W (the idle ones, when any is idle), those
//       whose cache is least full — fill(b) = index entries of b / its index bound (prefix_index.h),
//       within cold_fill_tolerance of the least — and of those the first in the prefix's
//       rendezvous order (kColdHome when that is its first home, kSpillHot for its second or
//       third, kLeastLoad beyond); if none is available that early, the earliest available of W
//       (kLeastLoad). A cold prefix is a commitment: the requests that share it later follow it,
//       so it goes where the cache has the most room (SGLang's router likewise places an
//       unmatched request on its smallest tree); among backends about equally full — every
//       backend, once the caches are full — the rendezvous order decides, the same for every
//       router.
//     Several gateway replicas that hear each other (RoutingContext::gateway: `count` of them,
//     this one the `rank`-th) each place the requests of one instant without the others'
//     placements of that instant (gossip carries them 10 ms later), so by the rules above their
//     requests of one instant collide: cold ones on the same idle backends, or all on the one
//     earliest available; those of one hot prefix on its earliest available holder. So, with
//     count > 1 (gateway_spread) and at least 2 x count candidates:
//     - the candidates are dealt into count shares by name hash (every count-th from the
//       rank-th on), and a cold prefix goes to the backends of this gateway's share only, by the
//       rule above with the fills compared within the share (each share's gateway places there);
//     - with none of its share available that early, each other gateway whose share has one
//       is taken to put one request on (the earliest of) those, and this one goes to its place
//       among the gateways without one in a water fill of W after those: the earliest
//       available backend, then the earliest again with this request's prefill added to the
//       one taken, and so on; only the backends of W within the fill tolerance of the fleet's
//       least full early backend take part, when any does (kLeastLoad);
//     - a useful match in W: the rank-th place of a water fill of W (rank 0: the earliest
//       available, as for one router), where one router would put the rank-th of such
//       requests arriving together.
//     With fewer candidates a share of one backend would leave no choice by home or fill: the
//     rules above unchanged, as for one router and for routers without gossip (count 1).
//     Homes: rendezvous hashing (HRW) of the prefix's placement key, score(b) = Mix64(key ^
//     NameHash(name of b)), the key being the chained hash of the first home_blocks blocks
//     (PrefixPlacementKey). Names, not ids: routers that learned the backends in another order
//     agree, and a backend's arrival or departure moves only the prefixes it becomes or stops
//     being home of.
// Reasons: kCacheHit — the chosen backend holds the best match and it is useful; kColdHome,
// kSpillHot, kLeastLoad as above.
//
// Parameters (defaults, and why; tuned with `warmroute sim` on 8 x Llama-3.1-70B TP4 H100 over
// support-bot, shared-prefix, multi-turn, agent, unique and the Mooncake traces):
//   slack_s               0      absolute cost margin of A
//   slack_fraction        0.5    relative cost margin of A: with the work term already pricing a
//                                miss, the margin mostly decides how much faster a cold backend
//                                must be to beat a warm one; 0.1-0.25 scattered conversations on
//                                the Mooncake traces (lower hit rate, higher p99), 1.0 overloaded
//                                holders
//   work_weight           1.0    0 is greedy per-request TTFT: on the Mooncake conversation trace
//                                it lost a third of the locality (hit rate 10-12% vs 15% with 1,
//                                pooled-cache bound 16.6%) for no TTFT gain; 2-4 did not add more
//   balance_factor        1.25   the balance factor of bounded-load hashing (Mirrokni et al.,
//                                SODA 2018; HAProxy hash-balance-factor 125); without a bound,
//                                the holders of a few shared system prompts collected most of the
//                                multi-turn sessions (busy-time imbalance 1.8, E2E +20%)
//   balance_abs           4      absolute in-flight margin: under light load a tight relative
//                                bound spread a 6,000-token tool prefix over every backend
//   beyond_key_fraction   0.5    half of the unkeyed rest of a wholly matched key counts as cached:
//                                on the Mooncake synthetic trace (40k-token prompts, 4k-token
//                                keys) 0 lost a third of the locality (hit 23% vs 33%, pooled
//                                bound 35%) and doubled TTFT p50 and p99; 1.0 gave the same as 0.5
//   useful_match_blocks   4      a match under 4 blocks (~64 tokens) is noise (a template
//   useful_match_fraction 0.10   header), and one under 10% of the (keyed) prompt saves little
//   home_blocks           64     placement key depth: 64 blocks of 64 characters = 4,096
//                                characters (~1,024 tokens). Deep enough to pass a long common
//                                head — the Mooncake conversation trace shares its first
//                                512-token block (32 blocks) across all requests, and chat
//                                templates share a header — yet inside the typical system prompt
//                                (support-bot: ~3,000 tokens; SGLang's generated-shared-prefix:
//                                2,048), so requests sharing a system prompt share a home
//   max_homes             3      homes a prefix is placed on deterministically
//   cold_fill_tolerance   0.02   fills that differ by less are equal for a cold prefix's
//                                placement; negative: the fill is not looked at. On the llmd-73
//                                workload (150 groups of 5 users, 8 replicas at ~73% KV fill)
//                                placing groups by queue and home alone left replicas with unequal
//                                shares of the groups: -1 gives hit 87.9%, TTFT p50 / p90 117 / 239
//                                ms in precise mode, 0.02 gives 93.0%, 45 / 155 ms (0: 92.8%,
//                                46 / 152; 0.1: 89.9%, 53 / 219); the other workloads of
//                                docs/routing-results.md move within their run-to-run noise.
//                                Several gateways in approximate mode disagree on the fills (each
//                                estimates them from its own traffic): support-bot, 1,000
//                                prompts, 4 gateways, 71.5% with 0.02, 84.0% with -1 (one gateway
//                                87.2%); in precise mode the fills come from the engines' events
//                                and agree: 86.0% with 0.02 (docs/many-gateways.md)
//   home_slack_s          0      a cold prefix goes home only if the home is available as early
//                                as any allowed backend (e.g. idle): any margin cost tail latency
//                                on the unique workload (p99 +15% at 20 ms). The homes' value —
//                                agreement between router replicas — shows with `warmroute sim
//                                --gateways N`; a margin adds little there (support-bot, 4
//                                gateways, approximate: 71.5% at 0, 72.0% at 0.05, 72.3% at
//                                0.2); negative disables cold homes
//   step_tokens           8192   prefill tokens per scheduler step: vLLM V1's default
//                                max_num_batched_tokens (chunked prefill)
//   step_overhead_tokens  180    fixed cost of a step in prefill-token equivalents: 15 ms / 80 us
//                                per token for Llama-3.1-70B TP4 on H100 (187), 6 ms / 35 us for
//                                8B on H100 (171) (timing_model.cc)
//   decode_context_weight 3e-4   cost of a running decode's context token per step, relative to
//                                a prefill token: decode attention reads each context token's KV
//                                (320 KiB / (4 x 3.35 TB/s) = 24 ns) vs 80 us per prefill token
//                                on 70B TP4 H100 = 3.1e-4 (8B H100: 39 ns / 35 us = 1.1e-3)
//   decode_seq_weight     0.5    cost of a running decode sequence per step, relative to a
//                                prefill token: 40 us / 80 us on 70B (8B: 30 / 35 = 0.86)
//   gateway_spread        1      1: several gateways deal cold prefixes by shares and hot ones by
//                                places as above; 0: each routes as if alone. On the Mooncake
//                                conversation trace on its own timestamps (about 10 requests per
//                                3-second instant), 8 replicas, 4 gateways: TTFT p50 1.19-1.23x
//                                one gateway's with 0 and 1.06-1.09x with 1 over ten seeds in
//                                approximate mode (precise: 1.13-1.20x, 1.04-1.05x), hit rate
//                                within about a point either way (docs/many-gateways.md). Shares of
//                                one backend (4 gateways, 4 tiny replicas, multi-turn) lost up
//                                to 9 points of hit rate: hence 2 x count candidates
// The decode weights only make decode-heavy backends look slower: the learned prefill rate
// carries each backend's speed, so heterogeneous fleets need no per-profile setting.
//
// Thread-safety: none (policy.h). Deterministic: uses no randomness.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/routing/policies/param_reader.h"
#include "core/routing/policy.h"

namespace warmroute::routing {

struct WarmrouteOptions {
  int home_blocks = 64;
  double slack_s = 0;
  double slack_fraction = 0.5;
  double balance_factor = 1.25;
  double balance_abs = 4;
  double work_weight = 1;
  double beyond_key_fraction = 0.5;
  int useful_match_blocks = 4;
  double useful_match_fraction = 0.10;
  int max_homes = 3;
  double home_slack_s = 0;
  double cold_fill_tolerance = 0.02;
  double step_tokens = 8192;
  double step_overhead_tokens = 180;
  double decode_context_weight = 3e-4;
  double decode_seq_weight = 0.5;
  int gateway_spread = 1;
};

class WarmroutePolicy final : public Policy {
 public:
  explicit WarmroutePolicy(WarmrouteOptions options) : options_(options) {}
  std::string_view name() const override { return "warmroute"; }
  Decision Route(const RoutingRequest& request, RoutingContext& ctx) override;
  void OnDispatched(const RoutingRequest& request, const Decision& decision) override;
  void OnFinished(const RoutingRequest& request, const Decision& decision) override {
    Forget(request, decision);
  }
  void OnFailed(const RoutingRequest& request, const Decision& decision) override {
    Forget(request, decision);
  }
  // The prefix's top max_homes candidates in rendezvous order (the homes of the rule above).
  void Homes(const RoutingRequest& request, const FleetView& fleet,
             std::span<const BackendId> candidates, std::vector<BackendId>& out) override;

  // Predicted TTFT in seconds, at `now`, of a request of `prompt_tokens` on `backend` if it
  // held `cached_tokens` of them.
  double PredictedTtft(const BackendState& backend, int64_t prompt_tokens, int64_t cached_tokens,
                       TimePoint now) const;
  // The prefill tokens still queued on `backend` at `now` (rule in the header comment).
  double QueuedPrefillTokens(const BackendState& backend, TimePoint now) const;

 private:
  uint64_t NameHashOf(const FleetView& fleet, BackendId backend);
  // Fills hrw_ with the candidates by rendezvous score of the request's placement key, its first
  // `top` sorted highest first.
  void RankHomes(const RoutingRequest& request, const FleetView& fleet,
                 std::span<const BackendId> candidates, size_t top);
  // share_[b] for every candidate b: its position among the candidates sorted by name hash,
  // modulo `count` (the gateway replicas' shares of the fleet, rule 5).
  void AssignShares(const RoutingContext& ctx, int count);
  // The share of its index bound that a backend's entries fill, in [0, 1].
  static double CacheFill(const PrefixIndex& index, BackendId backend);
  double UsefulTokens(const RoutingRequest& request, int64_t prompt) const;
  int64_t ExpectedCachedTokens(const RoutingRequest& request, int64_t prompt,
                               int32_t matched_blocks) const;
  // The prefix a dispatch counts in in_flight_by_prefix_ (the hash of the last block its best
  // candidate matched), or nullopt when it matched nothing.
  static std::optional<uint64_t> CountedPrefix(const RoutingRequest& request,
                                               const Decision& decision);
  void Forget(const RoutingRequest& request, const Decision& decision);

  WarmrouteOptions options_;
  std::vector<uint64_t> name_hashes_;  // by backend id (names never change for an id)
  std::vector<bool> name_hashed_;
  // Scratch space of Route, by backend id (kept to avoid allocating per decision).
  std::vector<double> ttft_;
  std::vector<double> cost_;
  std::vector<int64_t> cached_;
  std::vector<std::pair<uint64_t, BackendId>> hrw_;
  std::vector<double> fill_at_;
  std::vector<double> max_fill_of_;
  std::vector<std::pair<uint64_t, BackendId>> share_order_;
  std::vector<int> share_;
  std::vector<BackendId> others_taken_;
  // Requests in flight by the prefix they matched best (CountedPrefix).
  absl::flat_hash_map<uint64_t, int32_t> in_flight_by_prefix_;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeWarmroutePolicy(ParamReader& params);

}  // namespace warmroute::routing
