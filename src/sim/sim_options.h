// What one simulated run is made of: the workload (by options and seed), the fleet, and the
// gateway's view of it — network delay and metrics scrape interval — plus the router's own
// options. Parsed once (by `warmroute sim` or a test) into this immutable value.
//
// Thread-safety: a plain value.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "core/routing/prefix_key.h"
#include "core/routing/prewarm_planner.h"
#include "core/routing/router.h"
#include "core/workload/workload.h"
#include "sim/membership.h"
#include "sim/replica_spec.h"

namespace warmroute::sim {

struct SimOptions {
  // The request stream. Every run of the same options and seed sees the identical stream (a
  // fresh workload instance per run); closed-loop follow-up turns carry the engine's answer,
  // which depends only on the request (its generation seed is derived from `seed` and the id).
  workload::WorkloadOptions workload;
  uint64_t seed = 1;

  // REQUIRES: non-empty, every profile non-null and kv_capacity_tokens > 0.
  std::vector<ReplicaSpec> replicas;

  // One-way gateway <-> replica latency: a dispatched request reaches the engine this much later,
  // and every response event and metrics scrape reaches the router this much later.
  Duration network_delay = std::chrono::microseconds(500);
  // Each replica's metrics are scraped every interval (replica i at phase interval * i / N), as
  // the gateway's scraper would; the router gets each sample network_delay after it was taken.
  Duration scrape_interval = std::chrono::milliseconds(200);
  // Resolution of the per-replica load series in the results (not seen by the router).
  Duration series_interval = std::chrono::seconds(1);
  // Window of the hit-rate series in the results (RunResult::hit_series; not seen by the router).
  Duration hit_window = std::chrono::seconds(5);

  // A replica added or removed mid-run (membership.h), through the Router calls the gateway's
  // admin API makes. REQUIRES: replica < replicas.size() and replicas.size() >= 2.
  std::optional<MembershipChange> membership;
  // Prewarm and handoff (routing/prewarm_planner.h): each gateway keeps its hottest prefixes
  // and, when a replica is added, sends the prefixes whose homes include it to it; before one is
  // removed, sends the prefixes only it holds to their next homes. The requests are real engine
  // work (they take prefill time and fill the cache) on the simulated replicas, routed through
  // the Router pinned to their target; they are counted in RunResult::prewarm only. nullopt: off.
  // RunComparison keeps it for the `warmroute` policy only (the gateway's default).
  std::optional<routing::PrewarmOptions> prewarm;

  // Gateway replicas in front of the one fleet: `gateways` independent Routers (each its own
  // policy instance, index, history, random stream and scrape timing; gateway g scrapes replica
  // i at phase interval * (i * gateways + g) / (replicas * gateways)), as N `warmroute serve`
  // processes behind a TCP load balancer. Each request goes to one of them: kRandom, a uniform
  // draw per request (a round-robin or least-connection balancer over many clients); kAffinity,
  // by client: every turn of a session (WorkloadRequest::session) to the same gateway, as a
  // balancer with source-IP or cookie affinity keeps a client's connection on one gateway;
  // requests without a session are drawn at random. A gateway learns only from the requests it
  // routed (their responses' cached_tokens), its own scrapes, in precise mode the engines' KV
  // events, which every gateway subscribes to, and with `gossip` its peers' placements and load.
  // Membership changes reach every gateway at the same time.
  // REQUIRES: 1 <= gateways <= kMaxSimGateways.
  enum class GatewayAssignment : uint8_t { kRandom, kAffinity };
  int gateways = 1;
  GatewayAssignment gateway_assignment = GatewayAssignment::kRandom;
  // Placement gossip between the gateways (routing/placement_gossip.h), as `warmroute serve`'s
  // `gossip` section runs it: every `interval` (gateway g at phase interval * g / gateways) each
  // gateway encodes the placements it made since its last message; each message reaches every
  // other gateway network_delay later, or is lost on its way to it with probability `loss`.
  // nullopt, or one gateway: off. RunComparison keeps it for the `warmroute` policy only.
  struct Gossip {
    Duration interval = std::chrono::milliseconds(10);
    double loss = 0;
  };
  std::optional<Gossip> gossip;

  routing::RouterOptions router;
  routing::PrefixKeyOptions prefix_key;

  // How the router learns what the engines cache (docs/precise-mode.md).
  //   kApproximate: from its own routing history and the engines' reported cached tokens; a
  //                 request is keyed by its text (MakePrefixKey), as the gateway keys it.
  //   kPrecise:     also from the engines' KV events: every engine step's events are encoded as
  //                 vLLM publishes them (kv_events::EncodeKvEventBatch, one message per step with
  //                 events, sequence numbers from 0 per replica) and reach the router event_delay
  //                 later, each message lost with probability event_loss, through the gateway's
  //                 code: kv_events::BackendEventFeed (EventStream → DecodeEventBatch →
  //                 BlockIndexWriter → Router). A request is keyed by its exact token ids
  //                 (MakePrefixKeyFromTokens, block_tokens = the engine's block size) and its
  //                 DispatchDomain given to the Router after Route.
  enum class PrefixMode : uint8_t { kApproximate, kPrecise };
  PrefixMode prefix_mode = PrefixMode::kApproximate;
  // Precise mode. nullopt: network_delay.
  std::optional<Duration> event_delay;
  // Probability that one KV-event message never reaches the router (a PUB drop); in [0, 1].
  double event_loss = 0;
  // The replicas' replay endpoints (vLLM's ROUTER socket): a replay request reaches the replica
  // network_delay after the router sends it; the replica answers from its buffer of its last
  // replay_buffer_steps messages, and the answer reaches the router event_delay later. Off: a
  // gap rebuilds the backend's slice at once.
  bool event_replay = true;
  size_t replay_buffer_steps = 10'000;  // vLLM's ZmqEventPublisher(buffer_steps=10_000)
};

inline constexpr int kMaxSimGateways = 64;

inline std::string_view GatewayAssignmentName(SimOptions::GatewayAssignment assignment) {
  return assignment == SimOptions::GatewayAssignment::kAffinity ? "affinity" : "random";
}

inline std::string_view PrefixModeName(SimOptions::PrefixMode mode) {
  return mode == SimOptions::PrefixMode::kPrecise ? "precise" : "approximate";
}

}  // namespace warmroute::sim
