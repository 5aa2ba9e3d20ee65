#include "core/routing/policies/policy_util.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "xxhash.h"

namespace warmroute::routing {

uint64_t NameHash(std::string_view name) { return XXH3_64bits(name.data(), name.size()); }

uint64_t PrefixPlacementKey(const RoutingRequest& request, int depth_blocks) {
  const std::vector<uint64_t>& chain = request.key.block_hashes;
  if (chain.empty()) {
    const uint64_t model = XXH3_64bits(request.model.data(), request.model.size());
    return Mix64(model ^ XXH3_64bits_withSeed(request.tenant.data(), request.tenant.size(), 1));
  }
  const size_t depth = static_cast<size_t>(std::max(1, depth_blocks));
  return chain[std::min(depth, chain.size()) - 1];
}

namespace internal {
bool NearlyEqual(double a, double b) {
  if (a == b) return true;  // including two infinities
  if (!std::isfinite(a) || !std::isfinite(b)) return false;
  return std::abs(a - b) <= 1e-12 * std::max({1.0, std::abs(a), std::abs(b)});
}
}  // namespace internal

Decision DecideFor(const RoutingRequest& request, const RoutingContext& ctx, BackendId backend,
                   Reason reason) {
  Decision decision;
  decision.backend = backend;
  decision.reason = reason;
  decision.predicted_cached_tokens = PredictedCachedTokens(request, ctx.matched_blocks[backend]);
  return decision;
}

}  // namespace warmroute::routing
