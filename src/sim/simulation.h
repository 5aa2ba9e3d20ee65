// `warmroute sim`'s engine room: a discrete-event loop on virtual time that drives a workload, a
// Router with one policy, and N engine replicas (core/engine's EngineCore) — the very objects the
// gateway and the emulator run on real time.
//
// The loop. Events sit in a binary heap ordered by (virtual time, push order); workload arrivals
// are pulled lazily from the workload (one ahead, plus one after each response, which may release
// a closed-loop follow-up turn), so memory stays bounded by what is in flight.
//   arrival at the gateway (t)  → Router::Route with the router's clock at t; the request reaches
//                                 the chosen engine at t + network_delay.
//   engine step                 → a replica steps as soon as it has work and is idle; a step's
//                                 events (tokens, finish, preemption) take effect at step start +
//                                 duration, and the next step starts then. Per-token events are
//                                 handled inside the step handler, never queued one by one.
//   first token / finish        → reach the gateway network_delay later: Router::OnFirstToken;
//                                 Router::OnFinished with the engine's usage cached_tokens, and
//                                 Workload::OnResponse with the answer text.
//   metrics scrape              → every scrape_interval per replica (staggered): the engine's
//                                 num_running, num_waiting and KV usage as they are at the scrape,
//                                 given to Router::OnMetrics network_delay later.
//   membership change           → SimOptions::membership at its time: Router::AddBackend or
//                                 Router::RemoveBackend, as the gateway's admin API calls them
//                                 (membership.h); a removed replica drains and is not scraped.
//   KV events (precise mode)    → each engine step's KV events, encoded as vLLM publishes them,
//                                 reach the router SimOptions::event_delay after the step (or are
//                                 lost), through kv_events::BackendEventFeed — the gateway's
//                                 subscriber's core; a gap's replay request reaches the replica
//                                 network_delay later and its answer comes back event_delay later.
// The router is given nothing else: never the engines' cache contents. In approximate mode it
// never sees a request's tokenization either (its prefix key comes from the request text, as the
// live gateway's does); in precise mode it keys requests by their token ids, as a gateway with the
// model's tokenizer does.
//
// Several gateways (SimOptions::gateways): the loop holds one Router per gateway, sends each
// arrival to one of them, and delivers each response, scrape and KV-event message to the gateway
// that owns it, so every gateway sees only what a live gateway replica would.
//
// Usage:
//   SimOptions options = ...;
//   absl::StatusOr<RunResult> r = SimulateFleet(options, MakePolicy("warmroute", ...).value());
//   absl::StatusOr<RunResult> bound = SimulatePooled(options, /*infinite_bound=*/true);
//
// Determinism: a run is a pure function of its options, seed and policy: identical inputs give
// identical results. Thread-safety: each call is self-contained; distinct calls may run on
// distinct threads.
#pragma once

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "core/routing/policy.h"
#include "sim/run_result.h"
#include "sim/sim_options.h"

namespace warmroute::sim {

// Makes one policy instance: one per gateway (SimOptions::gateways), each with its own state.
using PolicyFactory = std::function<absl::StatusOr<std::unique_ptr<routing::Policy>>()>;

// Runs the workload through options.replicas behind options.gateways Routers, each with a policy
// from `make_policy`. InvalidArgument for invalid options (no replicas, a bad workload, a
// non-positive interval) and the factory's errors as they are.
absl::StatusOr<RunResult> SimulateFleet(const SimOptions& options,
                                        const PolicyFactory& make_policy);
// The same with one gateway and `policy`. REQUIRES (InvalidArgument): options.gateways == 1.
absl::StatusOr<RunResult> SimulateFleet(const SimOptions& options,
                                        std::unique_ptr<routing::Policy> policy);

// The pooled-cache bound: the same stream through ONE engine whose KV capacity is the fleet's
// total. So that the pooled engine is not simply overloaded, it also gets the fleet's compute:
// replica 0's profile with its per-token, per-sequence and per-context coefficients divided by
// the number of replicas and its batch limits (max_num_batched_tokens, max_num_seqs) multiplied
// by it. Its hit rate is what routing could reach if every replica saw every other replica's
// cache: an (approximate) upper bound on any policy's hit rate. Its latencies are not a bound and
// are not comparable with a fleet's. With `infinite_bound`, the run also computes the
// infinite-cache bound (infinite_cache_bound.h) over the stream in its arrival order. A
// membership change has no fleet to act on here and is ignored (but still recorded).
absl::StatusOr<RunResult> SimulatePooled(const SimOptions& options, bool infinite_bound);

}  // namespace warmroute::sim
