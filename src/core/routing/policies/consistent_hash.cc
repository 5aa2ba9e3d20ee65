#include "core/routing/policies/consistent_hash.h"

#include <algorithm>
#include <cmath>

#include "core/routing/policies/policy_util.h"

namespace warmroute::routing {
namespace {
constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
constexpr size_t kMaxCachedRings = 64;
}  // namespace

const ConsistentHashPolicy::Ring& ConsistentHashPolicy::RingFor(const RoutingContext& ctx) {
  uint64_t signature = ctx.candidates.size();
  for (BackendId b : ctx.candidates) signature = Mix64(signature ^ (b + kGolden));
  auto it = rings_.find(signature);
  if (it != rings_.end()) return it->second;
  if (rings_.size() >= kMaxCachedRings) rings_.clear();
  Ring ring;
  ring.reserve(ctx.candidates.size() * static_cast<size_t>(options_.virtual_nodes));
  for (BackendId b : ctx.candidates) {
    const uint64_t base = NameHash(ctx.fleet.backend(b).name);
    for (int i = 0; i < options_.virtual_nodes; ++i) {
      ring.emplace_back(Mix64(base + static_cast<uint64_t>(i) * kGolden), b);
    }
  }
  std::sort(ring.begin(), ring.end());
  return rings_.emplace(signature, std::move(ring)).first->second;
}

void ConsistentHashPolicy::OnBackendRemoved(BackendId /*backend*/) { rings_.clear(); }

Decision ConsistentHashPolicy::Route(const RoutingRequest& request, RoutingContext& ctx) {
  const Ring& ring = RingFor(ctx);
  const double n = static_cast<double>(ctx.candidates.size());
  int64_t total = 0;
  for (BackendId b : ctx.candidates) total += ctx.fleet.backend(b).in_flight;
  const auto bound = static_cast<int64_t>(
      std::ceil(options_.balance_factor * static_cast<double>(total + 1) / n - 1e-9));

  const uint64_t key = PrefixPlacementKey(request, options_.prefix_blocks);
  auto start = std::lower_bound(ring.begin(), ring.end(), std::make_pair(key, BackendId{0}));
  size_t pos = static_cast<size_t>(start - ring.begin());
  visited_.assign(ctx.fleet.size(), false);

  bool found = false;
  BackendId chosen = ctx.candidates.front();
  Alternates alternates;
  size_t distinct = 0;
  for (size_t step = 0; step < ring.size() && distinct < ctx.candidates.size(); ++step) {
    const BackendId b = ring[(pos + step) % ring.size()].second;
    if (visited_[b]) continue;
    visited_[b] = true;
    ++distinct;
    if (!found && ctx.fleet.backend(b).in_flight + 1 <= bound) {
      chosen = b;
      found = true;
    } else if (found) {
      alternates.push_back(b);
      if (alternates.size() == kMaxAlternates) break;
    }
  }
  // Unreachable with balance_factor >= 1 (some load is at most the average); kept for safety.
  if (!found) {
    chosen = ArgMin(
        ctx.candidates, [&](BackendId b) { return double(ctx.fleet.backend(b).in_flight); },
        nullptr);
  }
  Decision decision = DecideFor(request, ctx, chosen, Reason::kHash);
  decision.alternates = std::move(alternates);
  decision.scores = ScoreAll(
      ctx, [&](BackendId b) { return static_cast<double>(ctx.fleet.backend(b).in_flight); });
  return decision;
}

absl::StatusOr<std::unique_ptr<Policy>> MakeConsistentHashPolicy(ParamReader& params) {
  ConsistentHashOptions options;
  options.prefix_blocks = params.GetInt("prefix_blocks", options.prefix_blocks, 1, kMaxParamBlocks);
  options.balance_factor = params.Get("balance_factor", options.balance_factor);
  options.virtual_nodes = params.GetInt("virtual_nodes", options.virtual_nodes, 1, 10000);
  params.Require(options.balance_factor >= 1, "balance_factor", "must be at least 1");
  absl::Status status = params.status();
  if (!status.ok()) return status;
  return std::make_unique<ConsistentHashPolicy>(options);
}

}  // namespace warmroute::routing
