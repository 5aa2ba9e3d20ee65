// A routing policy: given a request's prefix key and the router's view of the fleet, pick a
// backend. Policies are small plugins built by name (policy_registry.h), one file each under
// policies/, each opening with a block comment that states its rule, its parameters with
// defaults, and where the rule comes from.
//
// The Router (router.h) does the bookkeeping every policy shares — the prefix-index walk, the
// candidate set, load accounting, speculative inserts and closed-loop corrections — and hands the
// policy a RoutingContext. A policy only decides, plus optional observation hooks for policies
// that keep their own state.
//
// Thread-safety: none; called by the Router's owner only. Deterministic for a given Rng seed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "common/clock.h"
#include "common/rng.h"
#include "core/routing/fleet_view.h"
#include "core/routing/prefix_key.h"

namespace warmroute::routing {

// Why a backend was chosen: for logs, metrics labels and the x-warmroute-reason header.
enum class Reason {
  kCacheHit,   // the best-matching backend (locality won)
  kColdHome,   // no useful match: the prefix's deterministic home
  kSpillHot,   // the home was saturated: the next home of the same prefix
  kLeastLoad,  // load won over locality, or no locality signal
  kHash,       // consistent hashing
  kRoundRobin,
  kRandom,
  kPinned,  // the request needs state one backend holds (RoutingRequest::placement)
};

// How a request is placed. Most requests carry a prompt whose prefix the engines may have cached:
// the policy decides. Requests that reuse no cache (embeddings, tokenization, scoring) go where
// the least work is outstanding, whatever the policy. A request that needs state only one
// backend holds (a follow-up of a response stored there) goes to that backend or nowhere.
enum class Placement {
  kPolicy,
  kLeastLoad,  // fewest requests in flight; ties to the least outstanding prefill
  kPinned,     // RoutingRequest::pinned, even while it drains; no alternates
};
std::string_view ReasonName(Reason reason);

struct RoutingRequest {
  uint64_t id = 0;
  std::string model;
  std::string tenant;
  std::vector<std::string> pools;  // backend pools the request may use; empty: any
  PrefixKey key;
  int64_t prompt_tokens = 0;  // exact or estimated
  int64_t max_tokens = 16;
  bool stream = false;
  Placement placement = Placement::kPolicy;
  BackendId pinned = 0;  // with Placement::kPinned
};

struct CandidateScore {
  BackendId backend = 0;
  double score = 0;  // the policy's own unit (documented per policy); lower is better
  int32_t matched_blocks = 0;
};

// Alternates a decision carries at most: the gateway retries at most twice, and one alternate
// may have become ineligible by then.
inline constexpr size_t kMaxAlternates = 3;
// Held inline: a decision's alternates cost no allocation (one per decision, under the gateway's
// routing lock).
using Alternates = absl::InlinedVector<BackendId, kMaxAlternates>;

struct Decision {
  BackendId backend = 0;
  // Ranked, for retries; excludes `backend`; at most kMaxAlternates. The Router completes a
  // shorter list with the remaining candidates, fewest in flight first.
  Alternates alternates;
  Reason reason = Reason::kLeastLoad;
  int64_t predicted_cached_tokens = 0;
  std::vector<CandidateScore> scores;  // candidates considered, for explanation
};

// Where this gateway stands among the gateway replicas that route for one fleet and hear each
// other (placement gossip, placement_gossip.h): `count` replicas, this one the `rank`-th of them
// by gossip sender id, so that every replica that hears the same peers numbers them alike.
// A gateway alone, or without gossip: {0, 1}.
struct GatewayPlace {
  int rank = 0;
  int count = 1;
  bool operator==(const GatewayPlace&) const = default;
};

struct RoutingContext {
  const FleetView& fleet;
  // Backends that serve the model and are Eligible(); never empty.
  std::span<const BackendId> candidates;
  // matched_blocks[b]: leading blocks of the request's key that backend b holds (prefix index),
  // for every backend id b < fleet.size().
  std::span<const int32_t> matched_blocks;
  // The Router's prefix index, read-only (e.g. entries(b): the size of a backend's cached set).
  const PrefixIndex& index;
  TimePoint now;
  Rng& rng;
  // Router::SetGatewayPlace's: a policy may use it to keep replicas that place requests at the
  // same instant, each without the others' placements of that instant, off the same backend.
  GatewayPlace gateway;
};

// The request's prompt length in tokens: request.prompt_tokens, or the key's estimate when 0.
int64_t PromptTokens(const RoutingRequest& request);

// Prompt tokens a backend holding `matched_blocks` leading blocks of request.key is predicted to
// serve from its cache: matched_blocks * key.tokens_per_block, at most PromptTokens - 1 (the
// engine always computes the last prompt token to produce the first output token), at least 0.
int64_t PredictedCachedTokens(const RoutingRequest& request, int32_t matched_blocks);

class Policy {
 public:
  Policy() = default;
  Policy(const Policy&) = delete;
  Policy& operator=(const Policy&) = delete;
  virtual ~Policy() = default;

  // The registry name, e.g. "round_robin".
  virtual std::string_view name() const = 0;

  // Chooses a backend among ctx.candidates. REQUIRES: !ctx.candidates.empty().
  virtual Decision Route(const RoutingRequest& request, RoutingContext& ctx) = 0;

  // Observation hooks; the Router has already updated the FleetView when they run. Each
  // OnDispatched is followed by exactly one OnFinished or OnFailed for the same dispatch, with
  // the same request and decision (decision.backend the backend it went to; a reroute is an
  // OnFailed, then an OnDispatched to the next backend).
  virtual void OnDispatched(const RoutingRequest& /*request*/, const Decision& /*decision*/) {}
  virtual void OnFinished(const RoutingRequest& /*request*/, const Decision& /*decision*/) {}
  virtual void OnFailed(const RoutingRequest& /*request*/, const Decision& /*decision*/) {}
  virtual void OnBackendRemoved(BackendId /*backend*/) {}

  // The backends this policy places `request`'s prefix on when it is cold, best first, among
  // `candidates` (e.g. warmroute's rendezvous homes), written to `out` (cleared first); empty for
  // a policy without deterministic homes. Pure: changes no routing state. Used to plan prewarm
  // and handoff requests (prewarm_planner.h) without re-deriving a policy's placement.
  virtual void Homes(const RoutingRequest& /*request*/, const FleetView& /*fleet*/,
                     std::span<const BackendId> /*candidates*/, std::vector<BackendId>& out) {
    out.clear();
  }
};

}  // namespace warmroute::routing
