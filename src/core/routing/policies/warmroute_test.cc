#include "core/routing/policies/warmroute.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/clock.h"
#include "core/routing/policies/policy_test_util.h"
#include "core/routing/policies/policy_util.h"
#include "core/routing/policy_registry.h"
#include "core/routing/router.h"
#include "gtest/gtest.h"

namespace warmroute::routing {
namespace {

using testing::Chain;
using testing::Request;
using testing::TestFleet;

// Backend names in the prefix's rendezvous order (first home first).
std::vector<std::string> HomeOrder(const RoutingRequest& request, std::vector<std::string> names,
                                   int home_blocks = 64) {
  const uint64_t key = PrefixPlacementKey(request, home_blocks);
  std::sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
    return RendezvousScore(key, NameHash(a)) > RendezvousScore(key, NameHash(b));
  });
  return names;
}

Decision RouteOnce(Policy& policy, TestFleet& fleet, const RoutingRequest& request) {
  RoutingContext ctx = fleet.Context(request);
  return policy.Route(request, ctx);
}

// 4 backends, a 3,250-token prompt whose first 200 blocks (3,200 tokens) are held by the backend
// that is NOT the prefix's first home, so locality has to win over the home preference.
struct WarmSetup {
  TestFleet fleet;
  RoutingRequest request = Request(1, Chain(42, 203), 3250);
  BackendId warm = 0;
  WarmSetup() {
    for (std::string name : {"r0", "r1", "r2", "r3"}) fleet.Add(name);
    const std::vector<std::string> order = HomeOrder(request, {"r0", "r1", "r2", "r3"});
    warm = static_cast<BackendId>(order[3][1] - '0');  // the last home
    fleet.index().Insert(warm, std::vector<uint64_t>(request.key.block_hashes.begin(),
                                                     request.key.block_hashes.begin() + 200));
  }
};

TEST(WarmroutePolicyTest, WarmBackendWinsWhenLightlyLoaded) {
  WarmSetup s;
  s.fleet.SetOutstanding(s.warm, 2000);  // 0.2 s of queue, others idle
  WarmroutePolicy policy({});
  Decision d = RouteOnce(policy, s.fleet, s.request);
  EXPECT_EQ(d.backend, s.warm);
  EXPECT_EQ(d.reason, Reason::kCacheHit);
  EXPECT_EQ(d.predicted_cached_tokens, 3200);
}

TEST(WarmroutePolicyTest, WarmBackendLosesWhenItsQueueIsLong) {
  WarmSetup s;
  s.fleet.SetOutstanding(s.warm, 20000);  // 2 s of queue vs 0.33 s cold
  WarmroutePolicy policy({});
  Decision d = RouteOnce(policy, s.fleet, s.request);
  EXPECT_NE(d.backend, s.warm);
  // Not scattered: the prefix's first home.
  EXPECT_EQ(s.fleet.at(d.backend).name, HomeOrder(s.request, {"r0", "r1", "r2", "r3"})[0]);
  EXPECT_EQ(d.reason, Reason::kSpillHot);
}

TEST(WarmroutePolicyTest, WarmBeatsASlightlyFasterColdBackend) {
  WarmSetup s;
  // Warm: 3,500 queued + 50 tokens; cold: 3,250 tokens: the cold one is 0.03 s faster, within
  // the slack, and the warm one saves the fleet 3,200 tokens of prefill.
  s.fleet.SetOutstanding(s.warm, 3500);
  WarmroutePolicy policy({});
  Decision d = RouteOnce(policy, s.fleet, s.request);
  EXPECT_EQ(d.backend, s.warm);
  double best = 1e9;
  for (const CandidateScore& c : d.scores) best = std::min(best, c.score);
  EXPECT_LT(best, d.scores[s.warm].score);  // it was not the fastest
}

TEST(WarmroutePolicyTest, ScoresArePredictedTtftOfEveryCandidate) {
  TestFleet fleet;
  fleet.Add("a");
  fleet.Add("b");
  fleet.SetOutstanding(1, 8000);
  fleet.at(1).prefill_tokens_per_s = 20000;
  RoutingRequest request = Request(1, Chain(1, 10), 1000);
  WarmroutePolicy policy({});
  Decision d = RouteOnce(policy, fleet, request);
  ASSERT_EQ(d.scores.size(), 2u);
  // a: (1,000 + 1 step x 180) / 10,000; b: (9,000 + 2 steps x 180) / 20,000.
  EXPECT_DOUBLE_EQ(d.scores[0].score, 1180.0 / 10000);
  EXPECT_DOUBLE_EQ(d.scores[1].score, 9360.0 / 20000);
}

TEST(WarmroutePolicyTest, WholeKeyMatchCountsHalfTheUnkeyedRestAsCached) {
  TestFleet fleet;
  fleet.Add("a");
  RoutingRequest request = Request(1, Chain(1, 10), 1000);  // the key covers 160 tokens
  fleet.index().Insert(0, request.key.block_hashes);
  WarmroutePolicy policy({});
  Decision d = RouteOnce(policy, fleet, request);
  EXPECT_EQ(d.predicted_cached_tokens, 160);  // what the index can show
  // Scored as 160 + 0.5 x 840 = 580 cached: (1,000 - 580 + 180) / 10,000.
  EXPECT_DOUBLE_EQ(d.scores[0].score, 600.0 / 10000);
}

TEST(WarmroutePolicyTest, DecodeLoadSlowsPrefill) {
  WarmroutePolicy policy({});
  BackendState idle;
  idle.prefill_tokens_per_s = 10000;
  BackendState decoding = idle;
  decoding.running_decodes = 100;
  decoding.decode_context_tokens = 300000;
  // 100 x 0.5 + 300,000 x 3e-4 = 140 token-equivalents per step.
  EXPECT_NEAR(policy.PredictedTtft(decoding, 1000, 0, {}) - policy.PredictedTtft(idle, 1000, 0, {}),
              140.0 / 10000, 1e-12);
  // Cached tokens are not recomputed.
  EXPECT_LT(policy.PredictedTtft(idle, 1000, 900, {}), policy.PredictedTtft(idle, 1000, 0, {}));
}

TEST(WarmroutePolicyTest, ColdPrefixGoesToItsFirstHome) {
  TestFleet fleet;
  std::vector<std::string> names;
  for (int i = 0; i < 8; ++i) names.push_back(fleet.at(fleet.Add("r" + std::to_string(i))).name);
  WarmroutePolicy policy({});
  std::map<std::string, int> per_backend;
  for (uint64_t p = 0; p < 400; ++p) {
    RoutingRequest request = Request(p, Chain(1000 + p, 80), 1300);
    Decision d = RouteOnce(policy, fleet, request);
    EXPECT_EQ(d.reason, Reason::kColdHome);
    EXPECT_EQ(fleet.at(d.backend).name, HomeOrder(request, names)[0]);
    ++per_backend[fleet.at(d.backend).name];
  }
  EXPECT_EQ(per_backend.size(), 8u);  // different prefixes, different homes
}

// 4 idle backends whose caches hold `fills` of their index bound (2^16 blocks each), listed in
// the rendezvous order of `request`'s prefix (fills[0] is its first home's).
struct FillSetup {
  TestFleet fleet;
  RoutingRequest request = Request(1, Chain(5, 80), 1300);
  std::vector<BackendId> by_home;  // backend ids in the prefix's rendezvous order
  explicit FillSetup(std::vector<double> fills) {
    for (std::string name : {"r0", "r1", "r2", "r3"}) fleet.Add(name);
    for (const std::string& name : HomeOrder(request, {"r0", "r1", "r2", "r3"})) {
      by_home.push_back(static_cast<BackendId>(name[1] - '0'));
    }
    for (size_t i = 0; i < fills.size(); ++i) {
      const int blocks = static_cast<int>(fills[i] * (1 << 16));
      if (blocks > 0) fleet.index().Insert(by_home[i], Chain(9000 + i, blocks));
    }
  }
};

TEST(WarmroutePolicyTest, ColdPrefixGoesToTheLeastFullIdleBackend) {
  FillSetup s({0.5, 0.5, 0.4, 0.1});
  WarmroutePolicy policy({});
  Decision d = RouteOnce(policy, s.fleet, s.request);
  EXPECT_EQ(d.backend, s.by_home[3]);
  EXPECT_EQ(d.reason, Reason::kLeastLoad);  // not one of its 3 homes
  // The least full must also be available as early as the others: a queue rules it out.
  s.fleet.SetOutstanding(s.by_home[3], 5000);
  d = RouteOnce(policy, s.fleet, s.request);
  EXPECT_EQ(d.backend, s.by_home[2]);
  EXPECT_EQ(d.reason, Reason::kSpillHot);  // its third home
}

TEST(WarmroutePolicyTest, FillsWithinTheToleranceKeepTheHomeOrder) {
  FillSetup s({0.51, 0.50, 0.50, 0.495});
  WarmroutePolicy policy({});
  Decision d = RouteOnce(policy, s.fleet, s.request);
  EXPECT_EQ(d.backend, s.by_home[0]);
  EXPECT_EQ(d.reason, Reason::kColdHome);
  WarmroutePolicy tight({.cold_fill_tolerance = 0});
  EXPECT_EQ(RouteOnce(tight, s.fleet, s.request).backend, s.by_home[3]);
}

TEST(WarmroutePolicyTest, NegativeFillToleranceIgnoresTheFill) {
  FillSetup s({0.9, 0.0, 0.0, 0.0});
  WarmroutePolicy policy({.cold_fill_tolerance = -1});
  Decision d = RouteOnce(policy, s.fleet, s.request);
  EXPECT_EQ(d.backend, s.by_home[0]);
  EXPECT_EQ(d.reason, Reason::kColdHome);
}

TEST(WarmroutePolicyTest, HomeIsKeyedBeyondASharedHead) {
  // All prompts share their first 32 blocks (like the Mooncake conversation trace's first
  // 512-token block) and differ after: they must not all get the same home.
  TestFleet fleet;
  for (int i = 0; i < 8; ++i) fleet.Add("r" + std::to_string(i));
  WarmroutePolicy policy({});
  std::set<BackendId> homes;
  for (uint64_t p = 0; p < 100; ++p) {
    std::vector<uint64_t> chain = Chain(7, 32);
    std::vector<uint64_t> tail = Chain(500 + p, 48);
    for (uint64_t& h : tail) h ^= chain.back();
    chain.insert(chain.end(), tail.begin(), tail.end());
    homes.insert(RouteOnce(policy, fleet, Request(p, chain, 1300)).backend);
  }
  EXPECT_EQ(homes.size(), 8u);
}

TEST(WarmroutePolicyTest, ColdHomeTooLoadedGoesToSecondHomeThenLeastLoaded) {
  TestFleet fleet;
  std::vector<std::string> names;
  for (int i = 0; i < 6; ++i) names.push_back(fleet.at(fleet.Add("r" + std::to_string(i))).name);
  RoutingRequest request = Request(1, Chain(3, 80), 1300);
  const std::vector<std::string> order = HomeOrder(request, names);
  auto id_of = [&](const std::string& name) { return static_cast<BackendId>(name[1] - '0'); };
  WarmroutePolicy policy({});

  fleet.SetOutstanding(id_of(order[0]), 5000);
  Decision d = RouteOnce(policy, fleet, request);
  EXPECT_EQ(d.backend, id_of(order[1]));
  EXPECT_EQ(d.reason, Reason::kSpillHot);

  for (int i = 0; i < 3; ++i) fleet.SetOutstanding(id_of(order[i]), 5000);
  fleet.SetOutstanding(id_of(order[3]), 100);
  fleet.SetOutstanding(id_of(order[4]), 100);  // order[5] is the idle one
  d = RouteOnce(policy, fleet, request);
  EXPECT_EQ(d.backend, id_of(order[5]));
  EXPECT_EQ(d.reason, Reason::kLeastLoad);
}

TEST(WarmroutePolicyTest, TinySharedMatchesDoNotCountAsLocality) {
  TestFleet fleet;
  std::vector<std::string> names;
  for (int i = 0; i < 4; ++i) names.push_back(fleet.at(fleet.Add("r" + std::to_string(i))).name);
  RoutingRequest request = Request(1, Chain(3, 80), 1300);
  const std::vector<std::string> order = HomeOrder(request, names);
  const BackendId not_home = static_cast<BackendId>(order[2][1] - '0');
  // Two blocks (a chat-template header) on a backend that is not the home.
  fleet.index().Insert(not_home, std::vector<uint64_t>(request.key.block_hashes.begin(),
                                                       request.key.block_hashes.begin() + 2));
  WarmroutePolicy policy({});
  Decision d = RouteOnce(policy, fleet, request);
  EXPECT_EQ(fleet.at(d.backend).name, order[0]);
  EXPECT_EQ(d.reason, Reason::kColdHome);
}

// 4 backends; a 3,250-token request whose 3,200-token system prompt only backend 0 holds, with
// 10 requests in flight there (the in-flight bound is ceil(1.25 x 11 / 4) + 4 = 8).
struct BoundSetup {
  TestFleet fleet;
  RoutingRequest request = Request(1, Chain(42, 203), 3250);
  std::vector<uint64_t> system{request.key.block_hashes.begin(),
                               request.key.block_hashes.begin() + 200};
  BoundSetup() {
    for (std::string name : {"r0", "r1", "r2", "r3"}) fleet.Add(name);
    fleet.index().Insert(0, system);
    fleet.at(0).in_flight = 10;
  }
};

TEST(WarmroutePolicyTest, InFlightBoundSpreadsASharedPrefix) {
  BoundSetup s;
  WarmroutePolicy policy({});
  // Another request that matched the same system prompt is in flight.
  Decision other;
  other.scores = {{.backend = 0, .score = 0, .matched_blocks = 200}};
  const RoutingRequest in_flight = Request(7, Chain(42, 210), 3300);
  policy.OnDispatched(in_flight, other);
  Decision d = RouteOnce(policy, s.fleet, s.request);
  EXPECT_NE(d.backend, 0u);
  EXPECT_EQ(d.reason, Reason::kSpillHot);
  // Once it finished, the prefix is nobody else's: the request stays with its holder.
  policy.OnFinished(in_flight, other);
  d = RouteOnce(policy, s.fleet, s.request);
  EXPECT_EQ(d.backend, 0u);
  EXPECT_EQ(d.reason, Reason::kCacheHit);
}

TEST(WarmroutePolicyTest, NoBoundWhenDisabled) {
  BoundSetup s;
  WarmroutePolicy policy({.balance_factor = 0});
  Decision other;
  other.scores = {{.backend = 0, .score = 0, .matched_blocks = 200}};
  policy.OnDispatched(Request(7, Chain(42, 210), 3300), other);
  EXPECT_EQ(RouteOnce(policy, s.fleet, s.request).backend, 0u);
}

TEST(WarmroutePolicyTest, HoldersShareLoadEarliestAvailableFirst) {
  TestFleet fleet;
  for (std::string name : {"r0", "r1", "r2"}) fleet.Add(name);
  RoutingRequest request = Request(1, Chain(42, 203), 3250);
  fleet.index().Insert(0, request.key.block_hashes);
  fleet.index().Insert(1, request.key.block_hashes);
  WarmroutePolicy policy({});
  // Both idle: the one idle longer (its last prefill ended earlier).
  fleet.at(0).prefill_done_at = TimePoint{} + std::chrono::milliseconds(50);
  fleet.at(1).prefill_done_at = TimePoint{} + std::chrono::milliseconds(10);
  RoutingContext ctx = fleet.Context(request);
  ctx.now = TimePoint{} + std::chrono::milliseconds(100);
  EXPECT_EQ(policy.Route(request, ctx).backend, 1u);
  // Backend 1 busy for another 30 ms: backend 0.
  fleet.at(1).outstanding_prefill_tokens = 300;
  fleet.at(1).prefill_done_at = ctx.now + std::chrono::milliseconds(30);
  Decision d = policy.Route(request, ctx);
  EXPECT_EQ(d.backend, 0u);
  EXPECT_EQ(d.reason, Reason::kCacheHit);
}

TEST(WarmroutePolicyTest, ElapsedTimeDiscountsQueuedPrefill) {
  WarmroutePolicy policy({});
  BackendState b;
  b.prefill_tokens_per_s = 10000;
  b.outstanding_prefill_tokens = 5000;
  b.prefill_done_at = TimePoint{} + std::chrono::milliseconds(500);
  EXPECT_DOUBLE_EQ(policy.QueuedPrefillTokens(b, TimePoint{}), 5000);
  EXPECT_DOUBLE_EQ(policy.QueuedPrefillTokens(b, TimePoint{} + std::chrono::milliseconds(300)),
                   2000);
  // Past the expected end with prefill still outstanding: one step's worth is left.
  EXPECT_DOUBLE_EQ(policy.QueuedPrefillTokens(b, TimePoint{} + std::chrono::seconds(2)), 180);
  b.outstanding_prefill_tokens = 0;
  EXPECT_DOUBLE_EQ(policy.QueuedPrefillTokens(b, TimePoint{}), 0);
}

// Through a real Router: accounting and speculative inserts make the prefix hot.
struct RouterSetup {
  ManualClock clock;
  Router router;
  std::vector<std::string> names;
  explicit RouterSetup(std::vector<std::string> backend_names, uint64_t seed = 1,
                       const PolicyParams& params = {})
      : router(MakePolicy("warmroute", params).value(), RouterOptions{}, clock, seed),
        names(std::move(backend_names)) {
    for (const std::string& name : names)
      router.AddBackend({.name = name, .kv_capacity_tokens = 460000});
  }
  std::string Route(const RoutingRequest& request, Reason* reason = nullptr) {
    absl::StatusOr<Decision> d = router.Route(request);
    if (d.ok()) router.CommitInsert(request.id);
    EXPECT_TRUE(d.ok()) << d.status();
    if (reason != nullptr) *reason = d->reason;
    return router.fleet().backend(d->backend).name;
  }
};

TEST(WarmroutePolicyTest, ColdPrefixesGetTheSameHomeAcrossIndependentRouters) {
  RouterSetup a({"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"}, /*seed=*/1);
  RouterSetup b({"r5", "r3", "r7", "r0", "r1", "r6", "r2", "r4"}, /*seed=*/99);
  for (uint64_t p = 0; p < 200; ++p) {
    RoutingRequest request = Request(p, Chain(p, 100), 1700);
    Reason ra;
    Reason rb;
    EXPECT_EQ(a.Route(request, &ra), b.Route(request, &rb));
    // Their first home, or another when it is fuller (cold_fill_tolerance): the same for both.
    EXPECT_EQ(ra, rb);
    EXPECT_NE(ra, Reason::kCacheHit);
    a.router.OnFinished(p, std::nullopt);  // keep both fleets idle
    b.router.OnFinished(p, std::nullopt);
  }
}

// Several gateways place the cold requests of one instant, none knowing the others'
// placements of that instant: each on the idle backends of its own share, so 4 gateways with 2
// requests each use all 8 idle backends, as one router placing the 8 in a row would. Routing
// each as if alone (gateway_spread 0), the prefixes' homes collide.
TEST(WarmroutePolicyTest, GatewaysPlacingColdPrefixesAtOneInstantUseDifferentIdleBackends) {
  const std::vector<std::string> names = {"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"};
  auto backends_used = [&](double spread) {
    std::set<std::string> used;
    for (int rank = 0; rank < 4; ++rank) {
      RouterSetup s(names, /*seed=*/1, {{"gateway_spread", spread}});
      s.router.SetGatewayPlace({.rank = rank, .count = 4});
      for (uint64_t k = 0; k < 2; ++k) {
        const uint64_t id = static_cast<uint64_t>(rank) * 2 + k;
        Reason reason;
        used.insert(s.Route(Request(id, Chain(500 + id, 80), 1300), &reason));
        EXPECT_NE(reason, Reason::kCacheHit);
      }
    }
    return used.size();
  };
  EXPECT_EQ(backends_used(1), 8u);
  EXPECT_LT(backends_used(0), 8u);
}

// With no backend idle, the gateway whose share holds the earliest available backend takes it,
// and the others their places of the water fill after it: the earliest available backend once
// this request's prefill is added to the one taken, and so on — not the rank-th earliest.
// Backends busy for 100 to 600 ms; a cold 1,500-token prompt (150 ms): the earliest, then the
// second, then the first again (100 + 150 < 300), whichever gateway owns it.
TEST(WarmroutePolicyTest, BusyFleetGatewaysTakeTheirPlacesOfTheWaterFill) {
  TestFleet fleet;
  for (int i = 0; i < 6; ++i) {
    const BackendId b = fleet.Add("r" + std::to_string(i));
    fleet.SetOutstanding(b, 1000 * (i + 1));
  }
  WarmroutePolicy policy({});
  const RoutingRequest request = Request(1, Chain(61, 90), 1500);
  // One gateway: the earliest available.
  EXPECT_EQ(RouteOnce(policy, fleet, request).backend, 0u);
  // Three gateways (two backends each): where one router would put three such requests in a
  // row.
  std::multiset<BackendId> chosen;
  for (int rank = 0; rank < 3; ++rank) {
    RoutingContext ctx = fleet.Context(request);
    ctx.gateway = {.rank = rank, .count = 3};
    chosen.insert(policy.Route(request, ctx).backend);
  }
  EXPECT_EQ(chosen, (std::multiset<BackendId>{0, 0, 1}));
}

// A hot prefix that 4 of 8 idle backends hold, asked for at one instant by a request at each of
// 4 gateways: one router would spread 4 such requests over the holders one after another, so the
// gateways take their places of the same water fill — each a different holder, where by the
// earliest available alone all 4 would go to the same one.
TEST(WarmroutePolicyTest, GatewaysAskingForAHotPrefixAtOneInstantTakeDifferentHolders) {
  TestFleet fleet;
  for (int i = 0; i < 8; ++i) fleet.Add("r" + std::to_string(i));
  const RoutingRequest request = Request(1, Chain(71, 190), 3100);
  for (BackendId b : {1u, 3u, 4u, 6u}) {
    fleet.index().Insert(b, std::vector<uint64_t>(request.key.block_hashes.begin(),
                                                  request.key.block_hashes.begin() + 187));
  }
  auto chosen = [&](int spread) {
    WarmroutePolicy policy({.gateway_spread = spread});
    std::set<BackendId> used;
    for (int rank = 0; rank < 4; ++rank) {
      RoutingContext ctx = fleet.Context(request);
      ctx.gateway = {.rank = rank, .count = 4};
      const Decision d = policy.Route(request, ctx);
      EXPECT_EQ(d.reason, Reason::kCacheHit);
      used.insert(d.backend);
    }
    return used;
  };
  EXPECT_EQ(chosen(1), (std::set<BackendId>{1, 3, 4, 6}));
  EXPECT_EQ(chosen(0).size(), 1u);
  // One gateway: the earliest available holder, as before.
  WarmroutePolicy alone({});
  EXPECT_EQ(RouteOnce(alone, fleet, request).backend, 1u);
}

// With none of its share idle, a gateway's place in the water fill is among the backends within
// the fill tolerance, as a cold prefix's placement is everywhere else: not an idle backend whose
// cache is full (its LRU would evict what the next turns of its conversations need).
TEST(WarmroutePolicyTest, BusyShareWaterFillKeepsToTheFillTolerance) {
  TestFleet fleet;
  std::vector<std::pair<uint64_t, BackendId>> by_hash;
  for (int i = 0; i < 4; ++i) {
    const std::string name = "r" + std::to_string(i);
    by_hash.emplace_back(NameHash(name), fleet.Add(name));
  }
  std::sort(by_hash.begin(), by_hash.end());  // shares: every second backend from the first
  const BackendId own_a = by_hash[0].second, own_b = by_hash[2].second;
  const BackendId other_idle = by_hash[1].second, other_full = by_hash[3].second;
  fleet.SetOutstanding(own_a, 1000);  // 0.1 s
  fleet.SetOutstanding(own_b, 1000);
  fleet.index().Insert(other_full, Chain(5, static_cast<int>(fleet.index().bound(other_full) / 2)));
  ASSERT_GT(fleet.index().entries(other_full), fleet.index().bound(other_full) / 3);
  const RoutingRequest request = Request(1, Chain(81, 90), 1500);  // 0.15 s of prefill
  WarmroutePolicy policy({});
  RoutingContext ctx = fleet.Context(request);
  ctx.gateway = {.rank = 0, .count = 2};
  // The other gateway takes its idle backend within the tolerance; this one the earliest of the
  // rest within it — its own busy ones — not the idle, full one.
  const BackendId chosen = policy.Route(request, ctx).backend;
  EXPECT_TRUE(chosen == own_a || chosen == own_b) << chosen;
  // Not looking at the fill, it takes one of the other share's two idle backends.
  WarmroutePolicy blind({.cold_fill_tolerance = -1});
  RoutingContext blind_ctx = fleet.Context(request);
  blind_ctx.gateway = {.rank = 0, .count = 2};
  const BackendId blind_chosen = blind.Route(request, blind_ctx).backend;
  EXPECT_TRUE(blind_chosen == other_idle || blind_chosen == other_full) << blind_chosen;
}

TEST(WarmroutePolicyTest, HotPrefixSpillsToItsSecondThenThirdHome) {
  RouterSetup s({"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"});
  // A 3,000-token system prompt plus a 50-token question; requests pile up (none finishes).
  std::vector<uint64_t> system = Chain(77, 187);
  std::vector<std::string> first_use;
  std::map<std::string, int> count;
  for (uint64_t id = 0; id < 60; ++id) {
    std::vector<uint64_t> chain = system;
    chain.push_back(Mix64(id));
    chain.push_back(Mix64(id + 1000));
    RoutingRequest request = Request(id, chain, 3050);
    const std::string backend = s.Route(request);
    if (count[backend]++ == 0) first_use.push_back(backend);
  }
  const std::vector<std::string> order = HomeOrder(Request(0, system, 3000), s.names);
  ASSERT_GE(first_use.size(), 3u);
  EXPECT_EQ(first_use[0], order[0]);
  EXPECT_EQ(first_use[1], order[1]);
  EXPECT_EQ(first_use[2], order[2]);
}

TEST(WarmroutePolicyTest, DecisionsAreDeterministic) {
  auto run = [] {
    RouterSetup s({"a", "b", "c", "d"});
    std::vector<std::string> out;
    for (uint64_t id = 0; id < 300; ++id) {
      RoutingRequest request = Request(id, Chain(id % 7, 120 + static_cast<int>(id % 5)), 2000);
      out.push_back(s.Route(request));
      s.clock.Advance(std::chrono::milliseconds(30));
      if (id >= 5) s.router.OnFinished(id - 5, 1000);
    }
    return out;
  };
  EXPECT_EQ(run(), run());
}

}  // namespace
}  // namespace warmroute::routing
