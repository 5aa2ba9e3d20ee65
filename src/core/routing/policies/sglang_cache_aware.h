// sglang_cache_aware: the SGLang router's cache-aware policy (sgl-router, policies/cache_aware.rs),
// reproduced from its code and documentation.
//
// Rule, per request, with load(b) = in_flight(b) (SGLang: the router's count of requests it sent
// to the worker and that are not done):
//   1. Imbalanced if max_load - min_load > balance_abs_threshold AND
//      max_load > balance_rel_threshold * min_load (over the candidates) -> the least loaded
//      backend (lowest id on ties, as Rust's min_by_key returns the first minimum).
//   2. Else match_rate = matched tokens / prompt tokens of the best-matching backend; if
//      match_rate > cache_threshold -> that backend (if several hold the longest match: the least
//      loaded of them, then the lowest id; SGLang takes the tenant its tree walk ends at).
//   3. Else -> the backend with the smallest tree, i.e. the fewest prefix-index entries (SGLang:
//      get_smallest_tenant, "most available cache capacity"; lowest id on ties). Not the least
//      loaded: SGLang sends cold prefixes to the emptiest cache, whatever its queue.
// In every case the request's text is inserted into the chosen worker's tree.
//
// Parameters (defaults: sgl-router's CacheAwareConfig defaults and launch_router --help, v0.1.x
// through 2025: cache_threshold 0.5, balance_abs_threshold 32, balance_rel_threshold 1.1;
// newer SGLang model-gateway builds and some deployments use 0.3 / 64 / 1.5 — pass them as
// overrides to compare):
//   cache_threshold        0.5   minimum match rate for the locality branch
//   balance_abs_threshold  32    absolute in-flight gap (requests) that may trigger balancing
//   balance_rel_threshold  1.1   relative in-flight ratio that may trigger balancing
//
// Equivalence with SGLang's approximate tree. SGLang keeps, per model, its own radix tree of the
// text it routed, one tenant per worker, with periodic LRU eviction down to max_tree_size; the
// match rate is matched characters / request characters. Here the Router's shared PrefixIndex
// plays that role: the request's chain is inserted speculatively for the chosen backend on every
// route (as SGLang inserts on every route, even in the imbalanced branch), each backend's entries
// are LRU-bounded by its KV capacity (rather than by a global node count), and the match rate is
// in blocks (matched blocks x tokens per block / prompt tokens). Differences: the index's match
// depth is bounded (16k characters by default, so a very long prompt's match rate is at most
// 16k characters / its length), and the Router's closed loop (RouterOptions::closed_loop) corrects
// the index from the engines' reported cached tokens, which SGLang's tree never does — the
// simulator can turn it off for this policy to compare it as shipped.
//
// Reasons: kLeastLoad (branches 1 and 3), kCacheHit (branch 2). Scores: in_flight (requests).
//
// Thread-safety: none (policy.h).
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "core/routing/policies/param_reader.h"
#include "core/routing/policy.h"

namespace warmroute::routing {

struct SglangCacheAwareOptions {
  double cache_threshold = 0.5;
  double balance_abs_threshold = 32;
  double balance_rel_threshold = 1.1;
};

class SglangCacheAwarePolicy final : public Policy {
 public:
  explicit SglangCacheAwarePolicy(SglangCacheAwareOptions options) : options_(options) {}
  std::string_view name() const override { return "sglang_cache_aware"; }
  Decision Route(const RoutingRequest& request, RoutingContext& ctx) override;

 private:
  SglangCacheAwareOptions options_;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeSglangCacheAwarePolicy(ParamReader& params);

}  // namespace warmroute::routing
