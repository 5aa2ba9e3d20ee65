// The sans-I/O routing core that both the live gateway and the simulator drive: it owns the
// fleet view, the prefix index and a policy, routes requests, and learns from what the engines
// report. Everything a policy may know comes through here, so the simulator cannot give a policy
// more than the gateway would have.
//
// Life of a request:
//   Route()        policy decides; the request counts as in flight on the backend with its
//                  predicted uncached prompt tokens outstanding.
//   CommitInsert() its chain is inserted into the index for that backend (speculative: the
//                  engine will have it once prefilled). A separate step so that the caller can
//                  take it off the request's path: the gateway runs it right after the request
//                  is on its way upstream, the simulator right after Route. At the latest it
//                  happens at OnFirstToken / OnFinished; a reroute needs it again.
//   Reroute()      the dispatch failed before any byte reached the client: move it to the next
//                  eligible alternate (retry); the failed backend's accounting and speculative
//                  insert are undone.
//                  (The prefill queued ahead of it, for the prefill-rate sample, includes what
//                  peer gateway replicas report: SetPeerLoad.)
//   OnFirstToken() prefill done: outstanding prefill → running decode; the TTFT is recorded.
//   OnFinished()   the engine reported usage.prompt_tokens_details.cached_tokens (if known):
//                  the TTFT becomes a prefill-rate sample (RouterOptions::min_rate_sample_tokens
//                  gives the rule), with the actual uncached tokens when reported; closed loop —
//                  when the report is lower than predicted, the backend's index entries beyond
//                  what it actually had are dropped (its least recently used ones: its index slice
//                  shrinks; router.cc), and a higher report grows the slice back; predicted vs
//                  reported are counted. A request finished without OnFirstToken (non-streaming)
//                  leaves prefill and decode at once.
//   OnFailed()     the request ended with an error; accounting undone (and the speculative insert,
//                  if no first token was seen).
// Unknown request ids are ignored by every hook (e.g. a late event after a failure).
//
// Precise mode (KV events; src/core/kv_events and docs/precise-mode.md). The caller keys a
// precise-mode request by its exact token ids (MakePrefixKeyFromTokens with block_tokens = the
// engines' block size) and, right after Route, gives its DispatchDomain (DomainOfTokenPrompt) to
// SetDispatchDomain: when its chain is inserted (CommitInsert, again after a reroute), the
// Router records the dispatch in attribution(), so that a kv_events::BlockIndexWriter can
// attribute the engine's stored first block to the request's domain. The caller decodes each
// backend's KV events, turns them into IndexUpdates with the writer (reading attribution()), and
// hands them to ApplyIndexUpdates; it reports each backend's stream state with SetKvEventState
// (kPrecise, kUncertain) and clears a slice that must be rebuilt (ClearIndex). Speculative
// inserts and the closed loop on cached_tokens keep working unchanged in every state: events
// confirm or remove what the speculative insert predicted, with the same hashes.
// The fall-back contract: a backend whose state is kUncertain has had its slice cleared and is
// rebuilding it from live events plus speculative inserts, so its matched depth is an
// approximate estimate (it may lack blocks the engine holds, never keeps blocks the stream
// reported removed). The Router routes on it as it is; a caller that selects a mode per request
// (the gateway) reads fleet().backend(b).kv_events to label the decision approximate, or to key
// the request by text instead while no candidate is kPrecise.
//
// Usage:
//   Router router(MakePolicy("warmroute", {}).value(), RouterOptions{}, clock, /*seed=*/1);
//   BackendId b = router.AddBackend({.name = "r0", .kv_capacity_tokens = 460000});
//   absl::StatusOr<Decision> d = router.Route(request);
//   router.CommitInsert(request.id);
//   router.OnFirstToken(request.id);
//   router.OnFinished(request.id, /*cached_tokens=*/1024);
//
// Thread-safety: none; one owner (a strand in the gateway, the event loop in the simulator).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/rng.h"
#include "core/routing/domain_attribution.h"
#include "core/routing/fleet_view.h"
#include "core/routing/index_updates.h"
#include "core/routing/policy.h"
#include "core/routing/prefix_index.h"

namespace warmroute::routing {

struct RouterOptions {
  PrefixIndexOptions index{};
  // Tokens one index block stands for when sizing a backend's index slice from its KV capacity.
  double tokens_per_block = 16;
  // KV capacity assumed for a backend whose capacity is unknown (0), to size its index slice.
  int64_t default_kv_capacity_tokens = 1'000'000;
  // Starting prefill-rate estimate (tokens/s) of a backend added to a fleet with no backend
  // present; one added later starts at the median of the present backends' estimates (AddBackend).
  double initial_prefill_tokens_per_s = 10000;
  // Weight of a new sample in the prefill-rate EWMA.
  // (A backend's n-th sample weighs max(prefill_rate_alpha, 1/n): the first ones are averaged.)
  double prefill_rate_alpha = 0.1;
  // Prefill-rate samples: a finished request gives one when its own uncached prompt tokens are
  // at least this many (below it, fixed per-step and network costs dominate its TTFT) and at
  // least the prefill tokens queued ahead of it at dispatch (its TTFT is dominated by its own
  // prefill); the sample is (queued ahead + own uncached tokens) / TTFT.
  int64_t min_rate_sample_tokens = 256;

  // Closed loop on the engines' reported cached tokens (see router.cc for the rule). Off: the
  // index only learns from routing (speculative inserts), as the SGLang router's tree does; the
  // simulator may turn it off for the baselines that do not have it.
  bool closed_loop = true;
  // A report counts as a misprediction when it differs from the prediction by more than
  // max(2 blocks, closed_loop_tolerance x predicted): absorbs the estimate of tokens per
  // character block in approximate mode and the engine's whole-block granularity.
  double closed_loop_tolerance = 0.25;
  // How a backend's slice shrinks at most: never below this fraction of its KV capacity.
  double min_slice_fraction = 0.25;
  // The literal closed-loop rule: on an over-prediction also drop the request's own chain beyond
  // the reported blocks. Off by default: the engine has just recomputed (and cached) that chain,
  // so dropping it would make the index forget what the engine now holds; the misprediction is
  // instead evidence that the backend's least recently used entries are stale (see router.cc).
  bool closed_loop_truncate_chain = false;

  // Precise mode: the window of recent dispatches per backend that attributes stored first
  // blocks to domains (domain_attribution.h).
  DomainAttributionOptions attribution{};
};

struct BackendSpec {
  std::string name{};
  std::vector<std::string> models{};  // empty = serves any model
  int64_t kv_capacity_tokens = 0;     // 0 = unknown (index slice uses a default)
  std::string pool{};                 // the tenants' pool it belongs to (RoutingRequest::pools)
};

struct RouterStats {
  int64_t routed = 0;
  int64_t predicted_cached_tokens = 0;  // Σ over finished requests with a reported value
  int64_t reported_cached_tokens = 0;
  int64_t corrections = 0;       // closed-loop corrections (over-predictions)
  int64_t underpredictions = 0;  // reports above the prediction beyond the tolerance
  int64_t rerouted = 0;
  int64_t failed = 0;
};

class Router {
 public:
  Router(std::unique_ptr<Policy> policy, RouterOptions options, const Clock& clock, uint64_t seed);
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // The new backend's prefill-rate estimate starts at the median of the present backends' (a
  // replica added to a fleet is most likely like the others), or at
  // RouterOptions::initial_prefill_tokens_per_s when none is present. With the fixed prior alone,
  // a backend added after the router had learned a fleet faster than the prior looked slower
  // than all the others to a policy that prices TTFT, got nothing, and so never learned. Until
  // its own first sample it then follows the median of the backends that have one (fleet_view.h):
  // the same holds for the backends a fresh router has not sent a request to yet.
  BackendId AddBackend(const BackendSpec& spec);
  // Removal keeps the id (never reused) but forgets the backend's index entries.
  void RemoveBackend(BackendId backend);
  void SetHealthy(BackendId backend, bool healthy);
  void SetDraining(BackendId backend, bool draining);
  void SetKvCapacity(BackendId backend, int64_t tokens);
  // The models a backend serves (empty: any), e.g. once discovered from its /v1/models.
  void SetModels(BackendId backend, std::vector<std::string> models);
  void OnMetrics(BackendId backend, const EngineMetricsSample& sample);

  // Decides and records the dispatch among the backends in request.pools (all, when empty), as
  // request.placement says. NotFound if none of them serves request.model (or any model, when
  // the fleet is empty); Unavailable if none of those is eligible. Pinned: NotFound when the
  // pinned backend is gone or does not serve the model in those pools, Unavailable when it is
  // unhealthy (a draining one is still used: the state the request needs is there).
  // REQUIRES: request.id is not in flight.
  // The returned decision carries no `scores` (the policy's OnDispatched sees them).
  // The request is taken by value and kept for as long as it is in flight: a caller that no
  // longer needs it moves it in, so that copying its key does not happen here (under a caller's
  // lock, in the gateway).
  absl::StatusOr<Decision> Route(RoutingRequest request);

  // Moves an in-flight request (no first token yet) to its next alternate; returns the new
  // backend, or nullopt when no alternate remains (the request is then failed).
  std::optional<BackendId> Reroute(uint64_t request_id);
  // The same, passing over as well each backend for which shares_failure(failed, backend) holds
  // for a backend the request failed on: one that fails with it (the gateway's data-parallel
  // ranks of one engine server, which share its address and its failures). Once alternates were
  // passed over so, the retry may go to any other eligible backend (the fewest in flight) when
  // none of the alternates is left: the alternates, at most kMaxAlternates, may all be ranks of
  // the failed server.
  std::optional<BackendId> Reroute(uint64_t request_id,
                                   absl::FunctionRef<bool(BackendId, BackendId)> shares_failure);
  // Inserts the request's chain for the backend it is now on (once per dispatch; a no-op for
  // an unknown id or when already done).
  void CommitInsert(uint64_t request_id);

  void OnFirstToken(uint64_t request_id);
  // cached_tokens: usage.prompt_tokens_details.cached_tokens, when the engine reported it.
  void OnFinished(uint64_t request_id, std::optional<int64_t> cached_tokens);
  void OnFailed(uint64_t request_id);

  // Precise mode (see the top of this file). Each is a no-op for an unknown request id, or an
  // unknown or removed backend.
  // The domain of an in-flight token-keyed request, recorded with each insert of its chain.
  void SetDispatchDomain(uint64_t request_id, const DispatchDomain& domain);
  // Applies a backend's index changes made from its KV events, in order.
  void ApplyIndexUpdates(BackendId backend, const IndexUpdates& updates);
  // Forgets everything the backend's slice holds (a stream's rebuild, a health flap, a
  // /reset_prefix_cache); speculative inserts refill it as requests are routed.
  void ClearIndex(BackendId backend);
  void SetKvEventState(BackendId backend, KvEventState state);
  const DomainAttribution& attribution() const { return attribution_; }

  // Several gateway replicas (placement_gossip.h). The observer sees every insert of a
  // dispatch's chain (CommitInsert, or the first token or the end when not committed before;
  // again after a reroute) with its backend and its DispatchDomain (SetDispatchDomain's;
  // first_block 0 when none was given): what this router tells its peers. It is called inside
  // the call that inserts and must not change the Router.
  using PlacementObserver =
      std::function<void(BackendId, std::span<const uint64_t> chain, const DispatchDomain& domain)>;
  void SetPlacementObserver(PlacementObserver observer) { observer_ = std::move(observer); }
  // A peer's placement on `backend`: its chain is inserted into the backend's slice, as a
  // speculative insert is, and its domain (when first_block != 0) is recorded for KV-event
  // attribution as this router's own dispatches' are. A no-op for an unknown or removed backend.
  void ApplyPeerPlacement(BackendId backend, std::span<const uint64_t> chain,
                          const DispatchDomain& domain = {});
  // The other gateway replicas' load on `backend`, summed (BackendState::peers). A no-op for an
  // unknown or removed backend.
  void SetPeerLoad(BackendId backend, const BackendLoad& load);
  // This gateway's place among the replicas that hear each other (RoutingContext::gateway);
  // GossipReceiver keeps it current. {0, 1} until set.
  void SetGatewayPlace(GatewayPlace place) { gateway_place_ = place; }
  GatewayPlace gateway_place() const { return gateway_place_; }

  // The policy's homes of request's prefix (Policy::Homes) among the backends that could take
  // it now: present, serving request.model, in request.pools, and eligible (healthy, not
  // draining). Empty when the policy has no deterministic homes. Changes no routing state.
  std::vector<BackendId> Homes(const RoutingRequest& request);

  const FleetView& fleet() const { return fleet_; }
  const PrefixIndex& index() const { return *index_; }
  const Policy& policy() const { return *policy_; }
  const RouterStats& stats() const { return stats_; }

 private:
  struct InFlight;
  void ApplySlice(BackendId backend);
  // The median prefill-rate estimate of the present backends (only of those with a sample, when
  // learned_only), or RouterOptions::initial_prefill_tokens_per_s when there is none.
  double PriorPrefillRate(bool learned_only) const;
  // OK when request.pinned may take the pinned request (see Route).
  absl::Status CheckPinned(const RoutingRequest& request) const;
  void Account(InFlight& request, BackendId backend);
  void InsertChain(InFlight& request);
  // Undoes Account; `completed`: the request finished (else failed: its speculative insert is
  // undone too when it had no first token).
  void Unaccount(InFlight& request, bool completed);
  void LearnPrefillRate(const InFlight& request, std::optional<int64_t> cached_tokens);
  void CloseLoop(const InFlight& request, int64_t cached_tokens);

  std::unique_ptr<Policy> policy_;
  RouterOptions options_;
  const Clock& clock_;
  Rng rng_;
  GatewayPlace gateway_place_;
  FleetView fleet_;
  std::unique_ptr<PrefixIndex> index_;
  DomainAttribution attribution_;
  absl::flat_hash_map<uint64_t, std::unique_ptr<InFlight>> in_flight_;
  RouterStats stats_;
  // Per backend: its KV capacity in index blocks, and its current index slice (the capacity
  // given to the index), which the closed loop shrinks and grows within [min, capacity].
  std::vector<int64_t> capacity_blocks_;
  std::vector<int64_t> slice_blocks_;
  size_t unlearned_backends_ = 0;  // present backends without a prefill-rate sample
  // Route's scratch (the candidates, the matched depths), reused so that a decision does not
  // allocate them.
  std::vector<BackendId> candidates_;
  std::vector<int32_t> matched_;
  PlacementObserver observer_;
};

}  // namespace warmroute::routing
