// Small helpers the policies share: prefix hashing for placement, backend name hashes,
// argmin with ties, and ranked alternates.
//
// Thread-safety: pure functions, except those drawing from the context's Rng.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "common/rng.h"
#include "core/routing/policy.h"

namespace warmroute::routing {

// XXH3-64 of a backend's name: placement by name (not by id) lets independent routers with the
// same backends agree, whatever order they learned them in.
uint64_t NameHash(std::string_view name);

// The placement key of a request's prefix: the chained hash of its first `depth_blocks` blocks
// (of all of them when the key is shorter), which identifies that whole prefix. A request with
// no full block (a prompt shorter than one block) has no prefix to place: its key is a hash of
// its model and tenant.
uint64_t PrefixPlacementKey(const RoutingRequest& request, int depth_blocks);

// Rendezvous (highest random weight) score of `backend_name_hash` for `key`: the candidate with
// the highest score is the key's first home, the next one its second, and so on.
inline uint64_t RendezvousScore(uint64_t key, uint64_t backend_name_hash) {
  return Mix64(key ^ backend_name_hash);
}

namespace internal {
bool NearlyEqual(double a, double b);
}  // namespace internal

// The candidate with the lowest cost(b). Ties (costs within 1e-12 relative) go to the lowest id
// when `rng` is null, else to a uniformly random one of them.
template <typename Cost>
BackendId ArgMin(std::span<const BackendId> candidates, const Cost& cost, Rng* rng) {
  BackendId best = candidates.front();
  double best_cost = cost(best);
  uint64_t ties = 1;
  for (size_t i = 1; i < candidates.size(); ++i) {
    const BackendId b = candidates[i];
    const double c = cost(b);
    if (internal::NearlyEqual(c, best_cost)) {
      // Reservoir sampling: each of the k tied candidates ends up chosen with probability 1/k.
      if (rng != nullptr && rng->UniformInt(++ties) == 0) best = b;
    } else if (c < best_cost) {
      best = b;
      best_cost = c;
      ties = 1;
    }
  }
  return best;
}

// Up to kMaxAlternates candidates other than `chosen`, lowest cost first (lowest id on ties).
template <typename Cost>
Alternates RankedAlternates(std::span<const BackendId> candidates, BackendId chosen,
                            const Cost& cost) {
  // Selection of the k smallest: k is tiny, so k passes beat sorting the candidates.
  Alternates alternates;
  while (alternates.size() < kMaxAlternates) {
    bool found = false;
    BackendId best = 0;
    double best_cost = 0;
    for (BackendId b : candidates) {
      if (b == chosen || std::find(alternates.begin(), alternates.end(), b) != alternates.end()) {
        continue;
      }
      const double c = cost(b);
      if (!found || c < best_cost) {
        best = b;
        best_cost = c;
        found = true;
      }
    }
    if (!found) break;
    alternates.push_back(best);
  }
  return alternates;
}

// A CandidateScore for every candidate.
template <typename Score>
std::vector<CandidateScore> ScoreAll(const RoutingContext& ctx, const Score& score) {
  std::vector<CandidateScore> scores;
  scores.reserve(ctx.candidates.size());
  for (BackendId b : ctx.candidates) {
    scores.push_back({.backend = b, .score = score(b), .matched_blocks = ctx.matched_blocks[b]});
  }
  return scores;
}

// A decision for `backend` with its predicted cached tokens filled in.
Decision DecideFor(const RoutingRequest& request, const RoutingContext& ctx, BackendId backend,
                   Reason reason);

// The decision of a policy that minimises `cost`: `chosen`, reason kCacheHit when it holds the
// best match among the candidates (best_blocks > 0) and kLeastLoad otherwise, alternates ranked
// by `cost`, and every candidate scored with it.
template <typename Cost>
Decision DecideByCost(const RoutingRequest& request, const RoutingContext& ctx, BackendId chosen,
                      int32_t best_blocks, const Cost& cost) {
  const Reason reason = best_blocks > 0 && ctx.matched_blocks[chosen] == best_blocks
                            ? Reason::kCacheHit
                            : Reason::kLeastLoad;
  Decision decision = DecideFor(request, ctx, chosen, reason);
  decision.alternates = RankedAlternates(ctx.candidates, chosen, cost);
  decision.scores = ScoreAll(ctx, cost);
  return decision;
}

}  // namespace warmroute::routing
