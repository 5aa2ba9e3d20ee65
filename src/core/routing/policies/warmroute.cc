#include "core/routing/policies/warmroute.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/routing/policies/policy_util.h"

namespace warmroute::routing {

uint64_t WarmroutePolicy::NameHashOf(const FleetView& fleet, BackendId backend) {
  if (backend >= name_hashes_.size()) {
    name_hashes_.resize(fleet.size(), 0);
    name_hashed_.resize(fleet.size(), false);
  }
  if (!name_hashed_[backend]) {
    name_hashes_[backend] = NameHash(fleet.backend(backend).name);
    name_hashed_[backend] = true;
  }
  return name_hashes_[backend];
}

void WarmroutePolicy::RankHomes(const RoutingRequest& request, const FleetView& fleet,
                                std::span<const BackendId> candidates, size_t top) {
  const uint64_t key = PrefixPlacementKey(request, options_.home_blocks);
  hrw_.clear();
  for (BackendId b : candidates) hrw_.emplace_back(RendezvousScore(key, NameHashOf(fleet, b)), b);
  top = std::min(top, hrw_.size());
  std::partial_sort(hrw_.begin(), hrw_.begin() + static_cast<std::ptrdiff_t>(top), hrw_.end(),
                    [](const auto& x, const auto& y) { return x.first > y.first; });
}

void WarmroutePolicy::AssignShares(const RoutingContext& ctx, int count) {
  std::vector<std::pair<uint64_t, BackendId>>& order = share_order_;
  order.clear();
  for (BackendId b : ctx.candidates) order.emplace_back(NameHashOf(ctx.fleet, b), b);
  std::sort(order.begin(), order.end());
  share_.assign(ctx.fleet.size(), -1);
  for (size_t i = 0; i < order.size(); ++i) {
    share_[order[i].second] = static_cast<int>(i % static_cast<size_t>(count));
  }
}

void WarmroutePolicy::Homes(const RoutingRequest& request, const FleetView& fleet,
                            std::span<const BackendId> candidates, std::vector<BackendId>& out) {
  out.clear();
  const size_t top =
      std::min(candidates.size(), static_cast<size_t>(std::max(1, options_.max_homes)));
  RankHomes(request, fleet, candidates, top);
  for (size_t i = 0; i < top; ++i) out.push_back(hrw_[i].second);
}

double WarmroutePolicy::QueuedPrefillTokens(const BackendState& backend, TimePoint now) const {
  const double peers =
      static_cast<double>(std::max<int64_t>(0, backend.peers.outstanding_prefill_tokens));
  const double outstanding =
      static_cast<double>(std::max<int64_t>(0, backend.outstanding_prefill_tokens));
  if (outstanding <= 0) return peers;
  const double rate = std::max(1.0, backend.prefill_tokens_per_s);
  const double by_time = ToSeconds(backend.prefill_done_at - now) * rate;
  return peers +
         std::clamp(by_time, std::min(outstanding, options_.step_overhead_tokens), outstanding);
}

double WarmroutePolicy::PredictedTtft(const BackendState& backend, int64_t prompt_tokens,
                                      int64_t cached_tokens, TimePoint now) const {
  const double work = QueuedPrefillTokens(backend, now) +
                      static_cast<double>(std::max<int64_t>(0, prompt_tokens - cached_tokens));
  const double steps = std::max(1.0, std::ceil(work / options_.step_tokens));
  const int64_t context = backend.decode_context_tokens + backend.peers.decode_context_tokens;
  const int64_t decodes = backend.running_decodes + backend.peers.running_decodes;
  const double per_step =
      options_.step_overhead_tokens +
      options_.decode_context_weight * static_cast<double>(std::max<int64_t>(0, context)) +
      options_.decode_seq_weight * static_cast<double>(std::max<int64_t>(0, decodes));
  const double rate = std::max(1.0, backend.prefill_tokens_per_s);
  return (work + steps * per_step) / rate;
}

double WarmroutePolicy::CacheFill(const PrefixIndex& index, BackendId backend) {
  return static_cast<double>(index.entries(backend)) /
         static_cast<double>(std::max<size_t>(1, index.bound(backend)));
}

double WarmroutePolicy::UsefulTokens(const RoutingRequest& request, int64_t prompt) const {
  // The key covers at most its blocks: a fraction of a longer prompt could never be matched.
  const double keyed =
      std::min(static_cast<double>(prompt),
               static_cast<double>(request.key.block_hashes.size()) * request.key.tokens_per_block);
  return std::max(options_.useful_match_blocks * request.key.tokens_per_block,
                  options_.useful_match_fraction * keyed);
}

int64_t WarmroutePolicy::ExpectedCachedTokens(const RoutingRequest& request, int64_t prompt,
                                              int32_t matched_blocks) const {
  const int64_t cached = PredictedCachedTokens(request, matched_blocks);
  const size_t key_blocks = request.key.block_hashes.size();
  const double keyed = static_cast<double>(key_blocks) * request.key.tokens_per_block;
  if (key_blocks == 0 || static_cast<size_t>(matched_blocks) < key_blocks ||
      static_cast<double>(prompt) <= keyed || options_.beyond_key_fraction <= 0) {
    return cached;
  }
  // The whole key matched and the prompt goes on beyond it: the backend likely holds more.
  const double beyond = options_.beyond_key_fraction * (static_cast<double>(prompt) - keyed);
  return std::min<int64_t>(prompt - 1, cached + static_cast<int64_t>(beyond));
}

std::optional<uint64_t> WarmroutePolicy::CountedPrefix(const RoutingRequest& request,
                                                       const Decision& decision) {
  int32_t best_blocks = 0;
  for (const CandidateScore& c : decision.scores)
    best_blocks = std::max(best_blocks, c.matched_blocks);
  if (best_blocks <= 0 || static_cast<size_t>(best_blocks) > request.key.block_hashes.size())
    return std::nullopt;
  return request.key.block_hashes[best_blocks - 1];
}

void WarmroutePolicy::OnDispatched(const RoutingRequest& request, const Decision& decision) {
  if (const std::optional<uint64_t> prefix = CountedPrefix(request, decision)) {
    ++in_flight_by_prefix_[*prefix];
  }
}

// The Router ends each dispatch once, with the request and decision it began with (policy.h), so
// the prefix is found again rather than remembered per request.
void WarmroutePolicy::Forget(const RoutingRequest& request, const Decision& decision) {
  const std::optional<uint64_t> prefix = CountedPrefix(request, decision);
  if (!prefix) return;
  auto count = in_flight_by_prefix_.find(*prefix);
  if (count != in_flight_by_prefix_.end() && --count->second <= 0)
    in_flight_by_prefix_.erase(count);
}

Decision WarmroutePolicy::Route(const RoutingRequest& request, RoutingContext& ctx) {
  const int64_t prompt = PromptTokens(request);
  const size_t n = ctx.candidates.size();

  // 1. Predicted TTFT and cached tokens of every candidate.
  std::vector<double>& ttft = ttft_;
  std::vector<int64_t>& cached = cached_;
  std::vector<double>& cost = cost_;
  ttft.assign(ctx.fleet.size(), 0);
  cached.assign(ctx.fleet.size(), 0);
  cost.assign(ctx.fleet.size(), 0);
  int64_t best_cached = 0;
  int32_t best_blocks = 0;
  for (BackendId b : ctx.candidates) {
    cached[b] = ExpectedCachedTokens(request, prompt, ctx.matched_blocks[b]);
    ttft[b] = PredictedTtft(ctx.fleet.backend(b), prompt, cached[b], ctx.now);
    cost[b] = ttft[b] + options_.work_weight * static_cast<double>(prompt - cached[b]) /
                            std::max(1.0, ctx.fleet.backend(b).prefill_tokens_per_s);
    best_cached = std::max(best_cached, cached[b]);
    best_blocks = std::max(best_blocks, ctx.matched_blocks[b]);
  }

  // 2. Allowed: under the in-flight bound, and within the slack of the best of those.
  // Every gateway replica's requests count (BackendState::peers: zero with one gateway).
  auto in_flight = [&](BackendId b) {
    return ctx.fleet.backend(b).in_flight + ctx.fleet.backend(b).peers.in_flight;
  };
  int64_t total_in_flight = 0;
  for (BackendId b : ctx.candidates) total_in_flight += in_flight(b);
  const double bound =
      options_.balance_factor > 0
          ? std::ceil(options_.balance_factor * static_cast<double>(total_in_flight + 1) /
                          static_cast<double>(n) -
                      1e-9) +
                options_.balance_abs
          : std::numeric_limits<double>::infinity();
  // A request whose best match nobody else in flight shares (its own conversation history) keeps
  // its locality whatever the bound: moving it would recompute that history for no one's benefit.
  const double eps = UsefulTokens(request, prompt);
  bool exempt = false;
  if (best_blocks > 0 && static_cast<double>(best_cached) >= eps) {
    auto it = in_flight_by_prefix_.find(request.key.block_hashes[best_blocks - 1]);
    exempt = it == in_flight_by_prefix_.end() || it->second == 0;
  }
  auto under_bound = [&](BackendId b) {
    return exempt || static_cast<double>(in_flight(b) + 1) <= bound;
  };
  double best_allowed = std::numeric_limits<double>::infinity();
  for (BackendId b : ctx.candidates) {
    if (under_bound(b)) best_allowed = std::min(best_allowed, cost[b]);
  }
  const double slack = options_.slack_s + options_.slack_fraction * best_allowed;
  auto allowed = [&](BackendId b) { return under_bound(b) && cost[b] <= best_allowed + slack; };
  // 3. Warmest of those (within eps).
  int64_t warmest_allowed = 0;
  for (BackendId b : ctx.candidates) {
    if (allowed(b)) warmest_allowed = std::max(warmest_allowed, cached[b]);
  }
  auto in_w = [&](BackendId b) {
    return allowed(b) &&
           static_cast<double>(cached[b]) >= static_cast<double>(warmest_allowed) - eps;
  };

  // 4. The prefix's homes: the top max_homes candidates by rendezvous score. Ranked only when a
  // branch below needs them (not when a warm holder is allowed, the common case of a hit).
  const size_t homes = std::min(n, static_cast<size_t>(std::max(1, options_.max_homes)));
  std::vector<std::pair<uint64_t, BackendId>>& hrw = hrw_;
  auto rank_homes = [&](size_t top) { RankHomes(request, ctx.fleet, ctx.candidates, top); };

  // Earliest available: when each backend's queued prefill is (expected to be) done; a backend
  // past its expected time with prefill still outstanding counts as available now. Peers'
  // outstanding prefill, known by its tokens only, comes after its own.
  auto available_at = [&](BackendId b) {
    const BackendState& state = ctx.fleet.backend(b);
    const TimePoint at = state.outstanding_prefill_tokens > 0
                             ? std::max(state.prefill_done_at, ctx.now)
                             : std::min(state.prefill_done_at, ctx.now);
    const double peers =
        static_cast<double>(std::max<int64_t>(0, state.peers.outstanding_prefill_tokens)) /
        std::max(1.0, state.prefill_tokens_per_s);
    return ToSeconds(at.time_since_epoch()) + peers;
  };
  auto earliest_in_w = [&]() {
    return ArgMin(
        ctx.candidates,
        [&](BackendId b) {
          return in_w(b) ? available_at(b) : std::numeric_limits<double>::infinity();
        },
        nullptr);
  };

  // Several gateways that hear each other (ctx.gateway), rule 5: each places the requests of an
  // instant without the others' placements of that instant. With at least two candidates per
  // gateway, each has a share of the fleet and a place.
  const int spread_rank = options_.gateway_spread ? ctx.gateway.rank : 0;
  const int spread_count = options_.gateway_spread ? std::max(1, ctx.gateway.count) : 1;
  const bool shares = spread_count > 1 && n >= 2 * static_cast<size_t>(spread_count);
  const double now_s = ToSeconds(ctx.now.time_since_epoch());
  // A water fill of the backends `in_fill` allows, after those `taken` by others: the earliest
  // available, then the earliest again with this request's prefill added to the one taken, and so
  // on; the pick of the given place (0: the earliest).
  auto water_fill = [&](std::span<const BackendId> taken, int place, auto in_fill) {
    std::vector<double>& at = fill_at_;
    at.assign(ctx.fleet.size(), std::numeric_limits<double>::infinity());
    for (BackendId b : ctx.candidates) {
      if (in_fill(b)) at[b] = available_at(b);
    }
    auto take = [&](BackendId b) {
      at[b] = std::max(at[b], now_s) + static_cast<double>(prompt - cached[b]) /
                                           std::max(1.0, ctx.fleet.backend(b).prefill_tokens_per_s);
    };
    for (BackendId b : taken) take(b);
    BackendId pick = ctx.candidates.front();
    for (int k = 0; k <= place; ++k) {
      pick = ArgMin(ctx.candidates, [&](BackendId b) { return at[b]; }, nullptr);
      take(pick);
    }
    return pick;
  };

  BackendId chosen = ctx.candidates.front();
  int home_rank = -1;
  const bool warm_w = warmest_allowed > 0 && static_cast<double>(warmest_allowed) >= eps;
  const bool useful = best_cached > 0 && static_cast<double>(best_cached) >= eps;
  if (warm_w) {
    // Locality decided it: spread over the allowed holders, earliest available first; with
    // shares, each gateway at its own place of a water fill of them.
    chosen = shares && spread_rank > 0 ? water_fill({}, spread_rank, in_w) : earliest_in_w();
  } else if (useful) {
    // Hot prefix: every holder is too loaded. Warm it on its next home, in HRW order.
    rank_homes(homes);
    for (size_t i = 0; i < homes && home_rank < 0; ++i) {
      if (in_w(hrw[i].second)) {
        chosen = hrw[i].second;
        home_rank = static_cast<int>(i);
      }
    }
    if (home_rank < 0) chosen = earliest_in_w();
  } else {
    // Cold prefix: of the backends available about as early as the earliest one, those with the
    // most free cache (within cold_fill_tolerance), and of those the first in the prefix's
    // rendezvous order.
    const double earliest_s = std::max(available_at(earliest_in_w()), now_s);
    auto early = [&](BackendId b) {
      return in_w(b) && std::max(available_at(b), now_s) <= earliest_s + options_.home_slack_s;
    };
    // With shares, each gateway takes the eligible backends of its own share only (a share of
    // one backend would leave no choice by home or fill: hence two or more), and a share's fills
    // are compared among its own backends: the gateway that owns it places there.
    if (shares) AssignShares(ctx, spread_count);
    const size_t groups = shares ? static_cast<size_t>(spread_count) : 1;
    auto group = [&](BackendId b) { return shares ? static_cast<size_t>(share_[b]) : 0; };
    // max_fill: over all backends; max_fill_of[g]: over share g's (the same without shares).
    double max_fill = std::numeric_limits<double>::infinity();
    std::vector<double>& max_fill_of = max_fill_of_;
    max_fill_of.assign(groups, std::numeric_limits<double>::infinity());
    if (options_.cold_fill_tolerance >= 0) {
      for (BackendId b : ctx.candidates) {
        if (!early(b)) continue;
        const double fill = CacheFill(ctx.index, b);
        max_fill = std::min(max_fill, fill);
        max_fill_of[group(b)] = std::min(max_fill_of[group(b)], fill);
      }
      max_fill += options_.cold_fill_tolerance;
      for (double& fill : max_fill_of) fill += options_.cold_fill_tolerance;
    }
    auto eligible = [&](BackendId b) {
      return early(b) && CacheFill(ctx.index, b) <= max_fill_of[group(b)];
    };
    auto mine = [&](BackendId b) { return !shares || share_[b] == spread_rank; };
    rank_homes(n);
    for (size_t i = 0; i < n; ++i) {
      const BackendId b = hrw[i].second;
      if (eligible(b) && mine(b)) {
        chosen = b;
        home_rank = static_cast<int>(i);
        break;
      }
    }
    if (home_rank < 0 && !shares) {
      chosen = earliest_in_w();
    } else if (home_rank < 0) {
      // None of its share is eligible: each other gateway whose share is takes (the earliest
      // available of) one of those, and this one takes its place among the gateways whose share
      // is not, in a water fill of W after those: the earliest available backend of W, then the
      // earliest again with this request's prefill added to the one taken, and so on. Only the
      // backends of W within the fill tolerance of the fleet's least full early backend take
      // part, when any does: not an idle backend whose cache is full.
      std::vector<BackendId>& others = others_taken_;
      others.clear();
      int place = 0;
      for (int q = 0; q < spread_count; ++q) {
        if (q == spread_rank) continue;
        std::optional<BackendId> first;
        for (BackendId b : ctx.candidates) {
          if (share_[b] == q && eligible(b) && (!first || available_at(b) < available_at(*first)))
            first = b;
        }
        if (first) {
          others.push_back(*first);
        } else if (q < spread_rank) {
          ++place;
        }
      }
      bool roomy = false;
      for (BackendId b : ctx.candidates) {
        roomy = roomy || (in_w(b) && CacheFill(ctx.index, b) <= max_fill);
      }
      chosen = water_fill(others, place, [&](BackendId b) {
        return in_w(b) && (!roomy || CacheFill(ctx.index, b) <= max_fill);
      });
    }
  }

  Reason reason;
  if (useful && cached[chosen] == best_cached) {
    reason = Reason::kCacheHit;
  } else if (home_rank == 0 && !useful) {
    reason = Reason::kColdHome;
  } else if (home_rank >= 0 && home_rank < static_cast<int>(homes)) {
    reason = Reason::kSpillHot;
  } else {
    reason = Reason::kLeastLoad;
  }

  auto ttft_of = [&](BackendId b) { return ttft[b]; };
  Decision decision = DecideFor(request, ctx, chosen, reason);
  decision.alternates = RankedAlternates(ctx.candidates, chosen, ttft_of);
  decision.scores = ScoreAll(ctx, ttft_of);
  return decision;
}

absl::StatusOr<std::unique_ptr<Policy>> MakeWarmroutePolicy(ParamReader& params) {
  WarmrouteOptions o;
  o.home_blocks = params.GetInt("home_blocks", o.home_blocks, 1, kMaxParamBlocks);
  o.slack_s = params.Get("slack_s", o.slack_s);
  o.slack_fraction = params.Get("slack_fraction", o.slack_fraction);
  o.balance_factor = params.Get("balance_factor", o.balance_factor);
  o.balance_abs = params.Get("balance_abs", o.balance_abs);
  o.work_weight = params.Get("work_weight", o.work_weight);
  o.beyond_key_fraction = params.Get("beyond_key_fraction", o.beyond_key_fraction);
  o.useful_match_blocks =
      params.GetInt("useful_match_blocks", o.useful_match_blocks, 0, kMaxParamBlocks);
  o.useful_match_fraction = params.Get("useful_match_fraction", o.useful_match_fraction);
  o.max_homes = params.GetInt("max_homes", o.max_homes, 1, kMaxParamHomes);
  o.home_slack_s = params.Get("home_slack_s", o.home_slack_s);
  o.cold_fill_tolerance = params.Get("cold_fill_tolerance", o.cold_fill_tolerance);
  o.step_tokens = params.Get("step_tokens", o.step_tokens);
  o.step_overhead_tokens = params.Get("step_overhead_tokens", o.step_overhead_tokens);
  o.decode_context_weight = params.Get("decode_context_weight", o.decode_context_weight);
  o.decode_seq_weight = params.Get("decode_seq_weight", o.decode_seq_weight);
  o.gateway_spread = params.GetInt("gateway_spread", o.gateway_spread, 0, 1);
  params.Require(o.slack_s >= 0, "slack_s", "must be non-negative");
  params.Require(o.slack_fraction >= 0, "slack_fraction", "must be non-negative");
  params.Require(o.balance_factor == 0 || o.balance_factor >= 1, "balance_factor",
                 "must be 0 (no bound) or at least 1");
  params.Require(o.balance_abs >= 0, "balance_abs", "must be non-negative");
  params.Require(o.work_weight >= 0, "work_weight", "must be non-negative");
  params.Require(o.beyond_key_fraction >= 0 && o.beyond_key_fraction <= 1, "beyond_key_fraction",
                 "must be in [0, 1]");
  params.Require(o.useful_match_fraction >= 0 && o.useful_match_fraction <= 1,
                 "useful_match_fraction", "must be in [0, 1]");
  params.Require(o.step_tokens >= 1, "step_tokens", "must be at least 1");
  params.Require(o.step_overhead_tokens >= 0, "step_overhead_tokens", "must be non-negative");
  params.Require(o.decode_context_weight >= 0, "decode_context_weight", "must be non-negative");
  params.Require(o.decode_seq_weight >= 0, "decode_seq_weight", "must be non-negative");
  absl::Status status = params.status();
  if (!status.ok()) return status;
  return std::make_unique<WarmroutePolicy>(o);
}

}  // namespace warmroute::routing
