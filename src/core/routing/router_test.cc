#include "core/routing/router.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/clock.h"
#include "common/rng.h"
#include "core/request/block_hash.h"
#include "core/routing/policies/policy_test_util.h"
#include "core/routing/policy_registry.h"
#include "gtest/gtest.h"

namespace warmroute::routing {
namespace {

using testing::Chain;
using testing::Request;

// Route, then the speculative insert, as the gateway and the simulator do.
absl::StatusOr<Decision> Dispatch(Router& router, const RoutingRequest& request) {
  absl::StatusOr<Decision> d = router.Route(request);
  if (d.ok()) router.CommitInsert(request.id);
  return d;
}

class RouterTest : public ::testing::Test {
 protected:
  std::unique_ptr<Router> Make(std::string_view policy, RouterOptions options = {}) {
    return std::make_unique<Router>(MakePolicy(policy, {}).value(), options, clock_, 1);
  }
  ManualClock clock_;
};

TEST_F(RouterTest, RouteAccountsTheRequestAndInsertsItsChain) {
  auto router = Make("round_robin");
  router->AddBackend({.name = "r0"});
  router->AddBackend({.name = "r1"});
  RoutingRequest request = Request(1, Chain(1, 50), 1000);
  absl::StatusOr<Decision> d = router->Route(request);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(router->index().Match(request.key.block_hashes)[0], 0);  // not yet: CommitInsert
  router->CommitInsert(request.id);
  router->CommitInsert(request.id);  // once per dispatch
  EXPECT_EQ(d->backend, 0u);
  EXPECT_EQ(d->predicted_cached_tokens, 0);
  const BackendState& b = router->fleet().backend(0);
  EXPECT_EQ(b.in_flight, 1);
  EXPECT_EQ(b.outstanding_prefill_tokens, 1000);
  EXPECT_EQ(b.dispatched_total, 1);
  EXPECT_EQ(b.prefill_tokens_total, 1000);
  EXPECT_EQ(router->index().Match(request.key.block_hashes)[0], 50);
  EXPECT_EQ(router->stats().routed, 1);
}

TEST_F(RouterTest, SpeculativeInsertPredictsTheNextRequestsCachedTokens) {
  auto router = Make("warmroute");
  router->AddBackend({.name = "r0"});
  ASSERT_TRUE(Dispatch(*router, Request(1, Chain(1, 50), 1000)).ok());
  absl::StatusOr<Decision> d = Dispatch(*router, Request(2, Chain(1, 50), 1000));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->predicted_cached_tokens, 800);
  EXPECT_EQ(d->reason, Reason::kCacheHit);
  EXPECT_EQ(router->fleet().backend(0).outstanding_prefill_tokens, 1000 + 200);
  // Capped at prompt - 1: the engine always computes the last token.
  d = Dispatch(*router, Request(3, Chain(1, 50), 800));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->predicted_cached_tokens, 799);
}

TEST_F(RouterTest, HomesAreWhereTheWarmroutePolicySendsAColdPrefix) {
  auto router = Make("warmroute");
  for (int i = 0; i < 6; ++i) router->AddBackend({.name = "r" + std::to_string(i)});
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    RoutingRequest request = Request(seed, Chain(seed, 80), 1280);
    const std::vector<BackendId> homes = router->Homes(request);
    ASSERT_EQ(homes.size(), 3u);  // max_homes
    EXPECT_EQ(std::set<BackendId>(homes.begin(), homes.end()).size(), 3u);
    absl::StatusOr<Decision> d = router->Route(request);  // idle, empty fleet: the first home
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->backend, homes.front());
    EXPECT_EQ(d->reason, Reason::kColdHome);
    router->OnFailed(request.id);  // leaves the fleet as it was
  }
  // A draining backend is no home; a policy without homes has none.
  RoutingRequest request = Request(100, Chain(100, 80), 1280);
  const BackendId first = router->Homes(request).front();
  router->SetDraining(first, true);
  const std::vector<BackendId> after = router->Homes(request);
  EXPECT_EQ(std::count(after.begin(), after.end(), first), 0);
  auto round_robin = Make("round_robin");
  round_robin->AddBackend({.name = "r0"});
  EXPECT_TRUE(round_robin->Homes(request).empty());
}

TEST_F(RouterTest, FirstTokenAndFinishMoveTheAccounting) {
  auto router = Make("round_robin");
  router->AddBackend({.name = "r0"});
  RoutingRequest request = Request(1, Chain(1, 50), 1000);
  request.max_tokens = 100;
  ASSERT_TRUE(Dispatch(*router, request).ok());
  router->OnFirstToken(1);
  const BackendState& b = router->fleet().backend(0);
  EXPECT_EQ(b.outstanding_prefill_tokens, 0);
  EXPECT_EQ(b.running_decodes, 1);
  EXPECT_EQ(b.decode_context_tokens, 1100);
  EXPECT_EQ(b.in_flight, 1);
  router->OnFirstToken(1);  // repeated: ignored
  EXPECT_EQ(b.running_decodes, 1);
  router->OnFinished(1, 0);
  EXPECT_EQ(b.in_flight, 0);
  EXPECT_EQ(b.running_decodes, 0);
  EXPECT_EQ(b.decode_context_tokens, 0);
  // The engine computed the chain: it stays in the index.
  EXPECT_EQ(router->index().Match(request.key.block_hashes)[0], 50);
  router->OnFinished(1, 0);  // unknown now: ignored
  EXPECT_EQ(b.in_flight, 0);
}

TEST_F(RouterTest, FinishWithoutFirstTokenReleasesPrefillAndKeepsTheChain) {
  auto router = Make("round_robin");
  router->AddBackend({.name = "r0"});
  RoutingRequest request = Request(1, Chain(1, 50), 1000);
  ASSERT_TRUE(Dispatch(*router, request).ok());
  router->OnFinished(1, std::nullopt);
  const BackendState& b = router->fleet().backend(0);
  EXPECT_EQ(b.in_flight, 0);
  EXPECT_EQ(b.outstanding_prefill_tokens, 0);
  EXPECT_EQ(b.running_decodes, 0);
  EXPECT_EQ(router->index().Match(request.key.block_hashes)[0], 50);
}

TEST_F(RouterTest, FailureUndoesAccountingAndTheSpeculativeInsert) {
  auto router = Make("round_robin");
  router->AddBackend({.name = "r0"});
  ASSERT_TRUE(Dispatch(*router, Request(1, Chain(1, 20), 1000)).ok());  // engine holds 20 blocks
  router->OnFinished(1, std::nullopt);
  RoutingRequest request = Request(2, Chain(1, 50), 1000);
  ASSERT_TRUE(Dispatch(*router, request).ok());
  router->OnFailed(2);
  const BackendState& b = router->fleet().backend(0);
  EXPECT_EQ(b.in_flight, 0);
  EXPECT_EQ(b.outstanding_prefill_tokens, 0);
  EXPECT_EQ(router->index().Match(request.key.block_hashes)[0], 20);
  EXPECT_EQ(router->stats().failed, 1);
}

TEST_F(RouterTest, RerouteMovesToTheNextEligibleAlternate) {
  auto router = Make("round_robin");
  for (std::string name : {"r0", "r1", "r2"}) router->AddBackend({.name = name});
  RoutingRequest request = Request(1, Chain(1, 50), 1000);
  absl::StatusOr<Decision> d = Dispatch(*router, request);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->backend, 0u);
  ASSERT_EQ(d->alternates, (Alternates{1, 2}));
  router->SetHealthy(1, false);
  std::optional<BackendId> next = router->Reroute(1);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(*next, 2u);
  router->CommitInsert(1);  // the proxy commits again after a reroute
  EXPECT_EQ(router->fleet().backend(0).in_flight, 0);
  EXPECT_EQ(router->fleet().backend(0).outstanding_prefill_tokens, 0);
  EXPECT_EQ(router->fleet().backend(2).in_flight, 1);
  EXPECT_EQ(router->fleet().backend(2).outstanding_prefill_tokens, 1000);
  std::vector<int32_t> held = router->index().Match(request.key.block_hashes);
  EXPECT_EQ(held[0], 0);
  EXPECT_EQ(held[2], 50);
  EXPECT_EQ(router->stats().rerouted, 1);
  // No alternate left: the request is failed.
  EXPECT_FALSE(router->Reroute(1).has_value());
  EXPECT_EQ(router->fleet().backend(2).in_flight, 0);
  EXPECT_EQ(router->stats().failed, 1);
  router->OnFirstToken(1);  // late event: ignored
  EXPECT_EQ(router->fleet().backend(2).running_decodes, 0);
}

// Backends that fail together (the gateway's data-parallel ranks of one server: s0, s1, s2, s3
// here) are passed over by a retry, and when they were all the alternates the retry goes to the
// other backend with the fewest requests in flight.
TEST_F(RouterTest, RerouteLeavesTheBackendsThatShareTheFailure) {
  auto router = Make("round_robin");
  for (std::string name : {"s0", "s1", "s2", "s3", "t", "u"}) router->AddBackend({.name = name});
  const auto same_server = [](BackendId failed, BackendId b) { return failed < 4 && b < 4; };
  ASSERT_TRUE(Dispatch(*router, Request(1, Chain(1, 50), 1000)).ok());  // u: busier than t
  ASSERT_EQ(router->fleet().backend(0).in_flight, 1);
  ASSERT_TRUE(Dispatch(*router, Request(2, Chain(2, 50), 1000)).ok());
  ASSERT_TRUE(Dispatch(*router, Request(3, Chain(3, 50), 1000)).ok());
  ASSERT_TRUE(Dispatch(*router, Request(4, Chain(4, 50), 1000)).ok());
  ASSERT_TRUE(Dispatch(*router, Request(5, Chain(5, 50), 1000)).ok());
  absl::StatusOr<Decision> u = Dispatch(*router, Request(6, Chain(6, 50), 1000));
  ASSERT_TRUE(u.ok());
  ASSERT_EQ(u->backend, 5u);
  for (uint64_t id = 1; id <= 5; ++id) router->OnFinished(id, std::nullopt);

  absl::StatusOr<Decision> d = Dispatch(*router, Request(7, Chain(7, 50), 1000));
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->backend, 0u);
  ASSERT_EQ(d->alternates, (Alternates{1, 2, 3}));
  std::optional<BackendId> next = router->Reroute(7, same_server);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(*next, 4u);  // t
  EXPECT_EQ(router->fleet().backend(4).in_flight, 1);
  EXPECT_EQ(router->fleet().backend(0).in_flight, 0);
  next = router->Reroute(7, same_server);  // t failed too: u, never a rank of the first server
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(*next, 5u);
  EXPECT_FALSE(router->Reroute(7, same_server).has_value());
  EXPECT_EQ(router->stats().failed, 1);

  // Without the predicate the alternates are the retries, as before.
  ASSERT_TRUE(Dispatch(*router, Request(8, Chain(8, 50), 1000)).ok());
  EXPECT_EQ(router->Reroute(8), std::optional<BackendId>(2));
}

// Records the Router's policy hooks and checks their contract (policy.h): each OnDispatched is
// followed by exactly one OnFinished or OnFailed, with the same request and decision.
class HookCheckingPolicy final : public Policy {
 public:
  std::string_view name() const override { return "hook_checking"; }
  Decision Route(const RoutingRequest& request, RoutingContext& ctx) override {
    Decision d;
    d.backend = ctx.candidates[request.id % ctx.candidates.size()];
    for (BackendId b : ctx.candidates) {
      d.scores.push_back({.backend = b, .score = 0, .matched_blocks = ctx.matched_blocks[b]});
    }
    return d;
  }
  void OnDispatched(const RoutingRequest& request, const Decision& decision) override {
    EXPECT_FALSE(open_.contains(request.id)) << "dispatched twice: " << request.id;
    open_[request.id] = {decision.backend, decision.scores.size(), request.key.block_hashes};
    ++dispatched_;
  }
  void OnFinished(const RoutingRequest& request, const Decision& decision) override {
    End(request, decision);
  }
  void OnFailed(const RoutingRequest& request, const Decision& decision) override {
    End(request, decision);
  }
  size_t open() const { return open_.size(); }
  int dispatched() const { return dispatched_; }

 private:
  struct Open {
    BackendId backend;
    size_t scores;
    std::vector<uint64_t> chain;
  };
  void End(const RoutingRequest& request, const Decision& decision) {
    auto it = open_.find(request.id);
    ASSERT_NE(it, open_.end()) << "ended without a dispatch: " << request.id;
    EXPECT_EQ(decision.backend, it->second.backend);
    EXPECT_EQ(decision.scores.size(), it->second.scores);
    EXPECT_EQ(request.key.block_hashes, it->second.chain);
    open_.erase(it);
  }
  absl::flat_hash_map<uint64_t, Open> open_;
  int dispatched_ = 0;
};

TEST_F(RouterTest, EveryDispatchEndsOnceWithItsRequestAndDecision) {
  auto owned = std::make_unique<HookCheckingPolicy>();
  HookCheckingPolicy& policy = *owned;
  Router router(std::move(owned), {}, clock_, 1);
  for (std::string name : {"r0", "r1", "r2", "r3"}) router.AddBackend({.name = name});
  Rng rng(3);
  std::vector<uint64_t> live;
  for (uint64_t id = 1; id <= 3000; ++id) {
    for (BackendId b = 0; b < 4; ++b) router.SetHealthy(b, rng.UniformInt(6) != 0);
    if (router.Route(Request(id, Chain(id % 7, 20), 400)).ok()) {
      router.CommitInsert(id);
      live.push_back(id);
    }
    while (live.size() > 12 || (!live.empty() && rng.UniformInt(3) == 0)) {
      const size_t i = rng.UniformInt(live.size());
      const uint64_t victim = live[i];
      switch (rng.UniformInt(5)) {
        case 0:
          router.OnFirstToken(victim);
          continue;  // still live
        case 1:
          if (router.Reroute(victim).has_value()) continue;  // moved: still live
          break;
        case 2:
          router.OnFailed(victim);
          break;
        default:
          router.OnFinished(victim, std::nullopt);
          break;
      }
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      if (HasFailure()) return;
    }
  }
  for (uint64_t id : live) router.OnFinished(id, std::nullopt);
  EXPECT_EQ(policy.open(), 0u);
  EXPECT_GT(policy.dispatched(), 3000);  // reroutes dispatch again
}

TEST_F(RouterTest, RerouteAfterFirstTokenFailsTheRequest) {
  auto router = Make("round_robin");
  router->AddBackend({.name = "r0"});
  router->AddBackend({.name = "r1"});
  ASSERT_TRUE(Dispatch(*router, Request(1, Chain(1, 5), 100)).ok());
  router->OnFirstToken(1);
  EXPECT_FALSE(router->Reroute(1).has_value());
  EXPECT_EQ(router->fleet().backend(0).in_flight, 0);
  EXPECT_EQ(router->fleet().backend(0).running_decodes, 0);
  EXPECT_EQ(router->fleet().backend(1).in_flight, 0);
}

TEST_F(RouterTest, RouterCompletesAlternates) {
  auto router = Make("power_of_two");  // gives one alternate
  for (std::string name : {"a", "b", "c", "d", "e"}) router->AddBackend({.name = name});
  for (uint64_t id = 0; id < 20; ++id) {
    absl::StatusOr<Decision> d = Dispatch(*router, Request(id, {}, 10));
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->alternates.size(), kMaxAlternates);
    std::set<BackendId> distinct(d->alternates.begin(), d->alternates.end());
    EXPECT_EQ(distinct.size(), d->alternates.size());
    EXPECT_FALSE(distinct.contains(d->backend));
  }
}

TEST_F(RouterTest, NotFoundAndUnavailable) {
  auto router = Make("warmroute");
  EXPECT_EQ(Dispatch(*router, Request(1, {}, 10)).status().code(), absl::StatusCode::kNotFound);
  const BackendId a = router->AddBackend({.name = "a", .models = {"llama"}});
  const BackendId b = router->AddBackend({.name = "b", .models = {"llama", "qwen"}});
  RoutingRequest request = Request(2, {}, 10);
  request.model = "mistral";
  absl::Status status = Dispatch(*router, request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(status.message().find("mistral"), std::string::npos);

  request.model = "qwen";
  absl::StatusOr<Decision> d = Dispatch(*router, request);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->backend, b);
  router->OnFinished(2, std::nullopt);

  router->SetHealthy(b, false);
  request.id = 3;
  EXPECT_EQ(Dispatch(*router, request).status().code(), absl::StatusCode::kUnavailable);
  router->SetHealthy(b, true);
  router->SetDraining(b, true);
  EXPECT_EQ(Dispatch(*router, request).status().code(), absl::StatusCode::kUnavailable);
  router->SetDraining(b, false);
  router->RemoveBackend(b);
  EXPECT_EQ(Dispatch(*router, request).status().code(), absl::StatusCode::kNotFound);
  request.model = "llama";
  d = Dispatch(*router, request);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->backend, a);
  EXPECT_EQ(Dispatch(*router, request).status().code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(RouterTest, LeastLoadPlacementIgnoresThePrefixAndPicksTheLeastBusy) {
  auto router = Make("warmroute");
  router->AddBackend({.name = "a"});
  router->AddBackend({.name = "b"});
  // The prefix's home holds it and is busier: the policy would stay there, least-load leaves.
  absl::StatusOr<Decision> first = Dispatch(*router, Request(1, Chain(1, 50), 1000));
  ASSERT_TRUE(first.ok());
  const BackendId home = first->backend;
  RoutingRequest request = Request(2, Chain(1, 50), 1000);
  request.placement = Placement::kLeastLoad;
  absl::StatusOr<Decision> d = Dispatch(*router, request);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_NE(d->backend, home);
  EXPECT_EQ(d->reason, Reason::kLeastLoad);
  ASSERT_EQ(d->alternates.size(), 1u);
  EXPECT_EQ(d->alternates[0], home);
}

TEST_F(RouterTest, PinnedPlacementGoesToItsBackendEvenWhileItDrainsAndNowhereElse) {
  auto router = Make("round_robin");
  const BackendId a = router->AddBackend({.name = "a", .models = {"m"}});
  router->AddBackend({.name = "b", .models = {"m"}});
  RoutingRequest request = Request(1, Chain(1, 10), 100);
  request.model = "m";
  request.placement = Placement::kPinned;
  request.pinned = a;
  router->SetDraining(a, true);
  absl::StatusOr<Decision> d = Dispatch(*router, request);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->backend, a);
  EXPECT_EQ(d->reason, Reason::kPinned);
  EXPECT_TRUE(d->alternates.empty());
  EXPECT_EQ(router->Reroute(1), std::nullopt);  // no retry elsewhere: the state is on a

  request.id = 2;
  router->SetDraining(a, false);
  router->SetHealthy(a, false);
  absl::Status status = Dispatch(*router, request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(status.message().find("backend a"), std::string::npos);
  router->SetHealthy(a, true);
  request.model = "other";
  EXPECT_EQ(Dispatch(*router, request).status().code(), absl::StatusCode::kNotFound);
  request.model = "m";
  router->RemoveBackend(a);
  EXPECT_EQ(Dispatch(*router, request).status().code(), absl::StatusCode::kNotFound);
  request.pinned = 7;  // never was
  EXPECT_EQ(Dispatch(*router, request).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(RouterTest, RequestWithoutModelIsServedByAnyBackend) {
  auto router = Make("round_robin");
  router->AddBackend({.name = "a", .models = {"llama"}});
  RoutingRequest request = Request(1, {}, 10);
  request.model = "";  // the server's default model
  EXPECT_TRUE(Dispatch(*router, request).ok());
  request.id = 2;
  request.model = "qwen";
  EXPECT_EQ(Dispatch(*router, request).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(RouterTest, RoutesAndReroutesOnlyWithinTheRequestsPools) {
  auto router = Make("round_robin");
  router->AddBackend({.name = "shared0", .pool = "shared"});
  router->AddBackend({.name = "own", .pool = "dedicated"});
  router->AddBackend({.name = "shared1", .pool = "shared"});
  for (uint64_t id = 1; id <= 6; ++id) {
    RoutingRequest request = Request(id, {}, 10);
    request.pools = {"dedicated"};
    absl::StatusOr<Decision> d = Dispatch(*router, request);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->backend, 1u);
    // No alternate outside the pool: a failed dispatch is not retried elsewhere.
    EXPECT_FALSE(router->Reroute(id).has_value());
  }
  RoutingRequest shared = Request(7, {}, 10);
  shared.pools = {"shared"};
  std::set<BackendId> used;
  for (uint64_t id = 7; id <= 12; ++id) {
    shared.id = id;
    used.insert(Dispatch(*router, shared).value().backend);
  }
  EXPECT_EQ(used, (std::set<BackendId>{0, 2}));
  RoutingRequest nowhere = Request(13, {}, 10);
  nowhere.pools = {"gpu-h200"};
  EXPECT_EQ(Dispatch(*router, nowhere).status().code(), absl::StatusCode::kNotFound);
  // The pool's only backend drains: unavailable, and the message names the pool (healthy
  // backends elsewhere do not count).
  router->SetDraining(1, true);
  RoutingRequest drained = Request(14, {}, 10);
  drained.pools = {"dedicated"};
  const absl::Status status = Dispatch(*router, drained).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(status.message(),
            "no healthy backend for model 'm' in pool dedicated (all unhealthy or draining)");
}

TEST_F(RouterTest, RemovedBackendForgetsItsIndexEntries) {
  auto router = Make("round_robin");
  const BackendId a = router->AddBackend({.name = "a"});
  router->AddBackend({.name = "b"});
  ASSERT_TRUE(Dispatch(*router, Request(1, Chain(1, 30), 1000)).ok());
  EXPECT_EQ(router->index().entries(a), 30u);
  router->RemoveBackend(a);
  EXPECT_EQ(router->index().entries(a), 0u);
  EXPECT_FALSE(router->fleet().backend(a).present);
  for (uint64_t id = 2; id < 6; ++id) EXPECT_EQ(Dispatch(*router, Request(id, {}, 10))->backend, 1u);
}

TEST_F(RouterTest, KvCapacitySizesTheIndexSlice) {
  auto router = Make("round_robin");
  const BackendId a = router->AddBackend({.name = "a", .kv_capacity_tokens = 460000});
  const BackendId b = router->AddBackend({.name = "b"});
  EXPECT_EQ(router->index().bound(a), 460000u / 16);
  EXPECT_EQ(router->index().bound(b), 1000000u / 16);
  router->SetKvCapacity(b, 16000);
  EXPECT_EQ(router->index().bound(b), 1000u);
  EXPECT_EQ(router->fleet().backend(b).kv_capacity_tokens, 16000);
}

TEST_F(RouterTest, PrefillRateLearnsFromTtftDominatedByOwnPrefill) {
  auto router = Make("round_robin");
  router->AddBackend({.name = "a"});
  ASSERT_TRUE(Dispatch(*router, Request(1, Chain(1, 10), 4000)).ok());
  clock_.Advance(std::chrono::milliseconds(200));
  router->OnFirstToken(1);
  EXPECT_DOUBLE_EQ(router->fleet().backend(0).prefill_tokens_per_s, 10000);  // learned at finish
  router->OnFinished(1, 0);
  // Sample 4,000 / 0.2 s = 20,000 tokens/s: the first sample weighs 1, the prior nothing.
  EXPECT_DOUBLE_EQ(router->fleet().backend(0).prefill_tokens_per_s, 20000);
  // The n-th weighs max(alpha, 1/n): the second, 4,000 / 0.4 s = 10,000, makes it their mean.
  ASSERT_TRUE(Dispatch(*router, Request(2, Chain(2, 10), 4000)).ok());
  clock_.Advance(std::chrono::milliseconds(400));
  router->OnFirstToken(2);
  router->OnFinished(2, 0);
  EXPECT_DOUBLE_EQ(router->fleet().backend(0).prefill_tokens_per_s, 15000);
}

TEST_F(RouterTest, PrefillRateUsesReportedCachedTokens) {
  auto router = Make("round_robin");
  router->AddBackend({.name = "a"});
  ASSERT_TRUE(Dispatch(*router, Request(1, Chain(1, 10), 4000)).ok());
  clock_.Advance(std::chrono::milliseconds(100));
  router->OnFirstToken(1);
  router->OnFinished(1, 2000);  // only 2,000 computed: 20,000 tokens/s
  EXPECT_DOUBLE_EQ(router->fleet().backend(0).prefill_tokens_per_s, 20000);
}

TEST_F(RouterTest, BackendAddedLaterStartsAtTheFleetsMedianPrefillRate) {
  auto router = Make("round_robin");
  router->AddBackend({.name = "a"});
  router->AddBackend({.name = "b"});
  router->AddBackend({.name = "c"});
  // One 4,000-token prefill each, in 0.1 s on a, 0.2 s on b and 0.4 s on c: samples of 40k, 20k
  // and 10k tokens/s, each a backend's first (weight 1), whatever it followed before.
  for (uint64_t id = 1; id <= 3; ++id) ASSERT_TRUE(Dispatch(*router, Request(id, {}, 4000)).ok());
  for (uint64_t id = 1; id <= 3; ++id) {
    clock_.Advance(std::chrono::milliseconds(100) * (id == 3 ? 2 : 1));
    router->OnFirstToken(id);
    router->OnFinished(id, 0);
  }
  ASSERT_DOUBLE_EQ(router->fleet().backend(0).prefill_tokens_per_s, 40000);
  ASSERT_DOUBLE_EQ(router->fleet().backend(1).prefill_tokens_per_s, 20000);
  ASSERT_DOUBLE_EQ(router->fleet().backend(2).prefill_tokens_per_s, 10000);
  const BackendId d = router->AddBackend({.name = "d"});
  EXPECT_DOUBLE_EQ(router->fleet().backend(d).prefill_tokens_per_s, 20000);
  // Removed backends do not count: the median of {40,000, 20,000}, without c and d, is the mean
  // of the two.
  router->RemoveBackend(2);
  router->RemoveBackend(d);
  EXPECT_DOUBLE_EQ(router->fleet().backend(router->AddBackend({.name = "e"})).prefill_tokens_per_s,
                   30000);
}

// A fleet faster than the prior: the backends the first requests went to learn it, and the
// others, with no sample yet, follow them instead of looking slower and never getting a request.
TEST_F(RouterTest, BackendsWithoutASampleFollowTheLearnedMedian) {
  auto router = Make("round_robin");
  for (std::string name : {"a", "b", "c", "d"}) router->AddBackend({.name = name});
  // 4,000 tokens in 0.05 s on a, 0.1 s on b: samples of 80k and 40k, each its backend's first.
  for (uint64_t id = 1; id <= 2; ++id) ASSERT_TRUE(Dispatch(*router, Request(id, {}, 4000)).ok());
  clock_.Advance(std::chrono::milliseconds(50));
  router->OnFirstToken(1);
  router->OnFinished(1, 0);
  EXPECT_DOUBLE_EQ(router->fleet().backend(0).prefill_tokens_per_s, 80000);
  EXPECT_DOUBLE_EQ(router->fleet().backend(2).prefill_tokens_per_s, 80000);
  EXPECT_DOUBLE_EQ(router->fleet().backend(1).prefill_tokens_per_s, 80000);  // no sample yet
  clock_.Advance(std::chrono::milliseconds(50));
  router->OnFirstToken(2);
  router->OnFinished(2, 0);  // b: its own first sample
  EXPECT_DOUBLE_EQ(router->fleet().backend(1).prefill_tokens_per_s, 40000);
  // c and d: the median of 80,000 and 40,000.
  EXPECT_DOUBLE_EQ(router->fleet().backend(2).prefill_tokens_per_s, 60000);
  EXPECT_DOUBLE_EQ(router->fleet().backend(3).prefill_tokens_per_s, 60000);
}

// A backend removed with its first request in flight left the count of backends without a sample
// when removed; its late sample must not take a present one off too.
TEST_F(RouterTest, RemovedBackendsLateSampleKeepsTheOthersFollowing) {
  auto router = Make("round_robin");
  for (std::string name : {"a", "b", "c"}) router->AddBackend({.name = name});
  for (uint64_t id = 1; id <= 2; ++id) ASSERT_TRUE(Dispatch(*router, Request(id, {}, 4000)).ok());
  clock_.Advance(std::chrono::milliseconds(100));
  router->OnFirstToken(1);
  router->OnFirstToken(2);
  router->RemoveBackend(0);
  router->OnFinished(1, 0);  // a, removed: learns, but c has no learned present backend to follow
  EXPECT_DOUBLE_EQ(router->fleet().backend(2).prefill_tokens_per_s, 10000);
  router->OnFinished(2, 0);  // b: 40,000; c, still without a sample, follows it
  EXPECT_DOUBLE_EQ(router->fleet().backend(1).prefill_tokens_per_s, 40000);
  EXPECT_DOUBLE_EQ(router->fleet().backend(2).prefill_tokens_per_s, 40000);
}

TEST_F(RouterTest, PrefillRateIgnoresQueueDominatedAndTinySamples) {
  auto router = Make("round_robin");
  router->AddBackend({.name = "a"});
  ASSERT_TRUE(Dispatch(*router, Request(1, {}, 6000)).ok());
  ASSERT_TRUE(Dispatch(*router, Request(2, {}, 3000)).ok());  // 6,000 queued ahead of 3,000
  ASSERT_TRUE(Dispatch(*router, Request(3, {}, 100)).ok());   // too small
  clock_.Advance(std::chrono::milliseconds(900));
  router->OnFirstToken(2);
  router->OnFirstToken(3);
  router->OnFinished(2, 0);
  router->OnFinished(3, 0);
  EXPECT_DOUBLE_EQ(router->fleet().backend(0).prefill_tokens_per_s, 10000);
}

TEST_F(RouterTest, PrefillDoneAtTracksQueuedWork) {
  auto router = Make("round_robin");
  router->AddBackend({.name = "a"});
  const BackendState& b = router->fleet().backend(0);
  ASSERT_TRUE(Dispatch(*router, Request(1, {}, 1000)).ok());  // 0.1 s at 10,000 tokens/s
  EXPECT_EQ(b.prefill_done_at, TimePoint{} + std::chrono::milliseconds(100));
  ASSERT_TRUE(Dispatch(*router, Request(2, {}, 1000)).ok());  // queued behind it
  EXPECT_EQ(b.prefill_done_at, TimePoint{} + std::chrono::milliseconds(200));
  clock_.Advance(std::chrono::milliseconds(50));
  router->OnFirstToken(1);  // early: the rest takes at most 1,000 tokens from now
  EXPECT_EQ(b.prefill_done_at, TimePoint{} + std::chrono::milliseconds(150));
  router->OnFirstToken(2);
  EXPECT_EQ(b.prefill_done_at, clock_.Now());
  clock_.Advance(std::chrono::seconds(1));
  ASSERT_TRUE(Dispatch(*router, Request(3, {}, 500)).ok());  // an idle backend starts from now
  EXPECT_EQ(b.prefill_done_at, clock_.Now() + std::chrono::milliseconds(50));
}

// A backend of 16,000 tokens (1,000 blocks) whose index holds 900 entries.
class ClosedLoopTest : public RouterTest {
 protected:
  std::unique_ptr<Router> MakeFilled(RouterOptions options = {}) {
    auto router = Make("round_robin", options);
    router->AddBackend({.name = "a", .kv_capacity_tokens = 16000});
    for (uint64_t id = 100; id < 109; ++id) {
      EXPECT_TRUE(Dispatch(*router, Request(id, Chain(id, 100), 2000)).ok());
      router->OnFinished(id, std::nullopt);
    }
    EXPECT_EQ(router->index().entries(0), 900u);
    return router;
  }
};

TEST_F(ClosedLoopTest, OverPredictionDropsTheBackendsStalestEntries) {
  auto router = MakeFilled();
  RoutingRequest request = Request(1, Chain(100, 50), 1000);  // the oldest chain's first 50
  absl::StatusOr<Decision> d = Dispatch(*router, request);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->predicted_cached_tokens, 800);
  router->OnFinished(1, 0);  // the engine had none of it
  EXPECT_EQ(router->stats().corrections, 1);
  EXPECT_EQ(router->stats().predicted_cached_tokens, 800);
  EXPECT_EQ(router->stats().reported_cached_tokens, 0);
  // 50 stale blocks: the slice shrinks to 900 - 50 entries, the least recently used go.
  EXPECT_EQ(router->index().bound(0), 850u);
  EXPECT_EQ(router->index().entries(0), 850u);
  // The chain the engine just recomputed is kept (it was used last).
  EXPECT_EQ(router->index().Match(request.key.block_hashes)[0], 50);
  // A report above the prediction grows the slice back.
  RoutingRequest cold = Request(2, Chain(999, 20), 1000);
  ASSERT_TRUE(Dispatch(*router, cold).ok());
  router->OnFinished(2, 640);  // predicted 0, the engine had 40 blocks
  EXPECT_EQ(router->stats().underpredictions, 1);
  EXPECT_EQ(router->index().bound(0), 890u);
}

TEST_F(ClosedLoopTest, SmallDifferencesAreTolerated) {
  auto router = MakeFilled();
  ASSERT_TRUE(Dispatch(*router, Request(1, Chain(100, 50), 1000)).ok());
  router->OnFinished(1, 700);  // 800 predicted: within 25%
  EXPECT_EQ(router->stats().corrections, 0);
  EXPECT_EQ(router->index().bound(0), 1000u);
}

TEST_F(ClosedLoopTest, SliceNeverShrinksBelowItsFloor) {
  auto router = MakeFilled();
  for (uint64_t id = 1; id < 40; ++id) {
    // Routed once (the index learns the chain), then again: predicted 1,600, reported 0.
    ASSERT_TRUE(Dispatch(*router, Request(2 * id, Chain(id, 100), 2000)).ok());
    router->OnFinished(2 * id, std::nullopt);
    ASSERT_TRUE(Dispatch(*router, Request(2 * id + 1, Chain(id, 100), 2000)).ok());
    router->OnFinished(2 * id + 1, 0);
  }
  EXPECT_EQ(router->index().bound(0), 250u);  // 25% of 1,000 blocks
}

TEST_F(ClosedLoopTest, OffCountsButDoesNotCorrect) {
  auto router = MakeFilled({.closed_loop = false});
  ASSERT_TRUE(Dispatch(*router, Request(1, Chain(100, 50), 1000)).ok());
  router->OnFinished(1, 0);
  EXPECT_EQ(router->stats().corrections, 0);
  EXPECT_EQ(router->stats().predicted_cached_tokens, 800);
  EXPECT_EQ(router->index().bound(0), 1000u);
}

TEST_F(ClosedLoopTest, LiteralRuleTruncatesTheChain) {
  auto router = MakeFilled({.closed_loop_truncate_chain = true});
  RoutingRequest request = Request(1, Chain(100, 50), 1000);
  ASSERT_TRUE(Dispatch(*router, request).ok());
  router->OnFinished(1, 160);  // the engine had 10 blocks
  EXPECT_EQ(router->stats().corrections, 1);
  EXPECT_EQ(router->index().Match(request.key.block_hashes)[0], 10);
  EXPECT_EQ(router->index().bound(0), 1000u);
}

TEST_F(RouterTest, SetModelsNarrowsABackendThatServedAnyModel) {
  auto router = Make("round_robin");
  const BackendId a = router->AddBackend({.name = "a"});  // any model, until told
  RoutingRequest request = Request(1, Chain(1, 4), 100);
  request.model = "qwen";
  ASSERT_TRUE(Dispatch(*router, request).ok());
  router->OnFinished(1, std::nullopt);
  router->SetModels(a, {"llama"});
  request.id = 2;
  EXPECT_EQ(Dispatch(*router, request).status().code(), absl::StatusCode::kNotFound);
  request.model = "llama";
  EXPECT_TRUE(Dispatch(*router, request).ok());
  request.id = 3;
  request.model = "";  // the server's default model: any backend
  EXPECT_TRUE(Dispatch(*router, request).ok());
}

// Precise mode: index changes made from a backend's KV events (kv_events::BlockIndexWriter's
// output) go into that backend's slice; speculative inserts keep working beside them.
TEST_F(RouterTest, IndexUpdatesFromEventsChangeOnlyTheirBackendsSlice) {
  auto router = Make("warmroute");
  const BackendId b0 = router->AddBackend({.name = "r0"});
  const BackendId b1 = router->AddBackend({.name = "r1"});
  const std::vector<uint64_t> chain = Chain(7, 6);
  IndexUpdates stored;
  stored.Insert(std::span<const uint64_t>(chain).first(4));
  stored.Insert(std::span<const uint64_t>(chain).subspan(3));  // a run after its parent
  router->ApplyIndexUpdates(b1, stored);
  EXPECT_EQ(router->index().Match(chain)[b1], 6);
  EXPECT_EQ(router->index().Match(chain)[b0], 0);

  IndexUpdates removed;
  removed.Remove(std::span<const uint64_t>(chain).subspan(2, 1));
  router->ApplyIndexUpdates(b1, removed);
  EXPECT_EQ(router->index().Match(chain)[b1], 2);

  IndexUpdates cleared;
  cleared.ClearAll();
  router->ApplyIndexUpdates(b1, cleared);
  EXPECT_EQ(router->index().entries(b1), 0u);

  // The speculative insert of a routed request still lands, and ClearIndex drops it.
  ASSERT_TRUE(Dispatch(*router, Request(1, chain, 6 * 16)).ok());
  EXPECT_EQ(router->index().entries(), 6u);
  router->ClearIndex(router->index().entries(b0) > 0 ? b0 : b1);
  EXPECT_EQ(router->index().entries(), 0u);
}

TEST_F(RouterTest, ARemovedBackendKeepsNoEventEntriesOrState) {
  auto router = Make("warmroute");
  const BackendId b0 = router->AddBackend({.name = "r0"});
  router->SetKvEventState(b0, KvEventState::kUncertain);
  EXPECT_EQ(router->fleet().backend(b0).kv_events, KvEventState::kUncertain);
  IndexUpdates stored;
  const std::vector<uint64_t> chain = Chain(3, 5);
  stored.Insert(chain);
  router->ApplyIndexUpdates(b0, stored);
  EXPECT_EQ(router->index().entries(b0), 5u);
  router->RemoveBackend(b0);
  EXPECT_EQ(router->index().entries(), 0u);
  EXPECT_EQ(router->fleet().backend(b0).kv_events, KvEventState::kNone);
  router->ApplyIndexUpdates(b0, stored);  // late events of a removed backend: ignored
  EXPECT_EQ(router->index().entries(), 0u);
}

TEST_F(RouterTest, ATokenKeyedDispatchIsRecordedForAttribution) {
  auto router = Make("round_robin");
  const BackendId b0 = router->AddBackend({.name = "r0"});
  std::vector<int32_t> tokens(40);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(i);
  RoutingRequest request = Request(1, {}, 40);
  request.model = "m";
  request.key = MakePrefixKeyFromTokens("m", PrefixKeySalt("", "s"), tokens, {.block_tokens = 16});
  const DispatchDomain domain = DomainOfTokenPrompt("m", "", "s", tokens, 16);
  const uint64_t first = FirstBlockContentHash(std::span<const int32_t>(tokens).first(16));
  ASSERT_EQ(domain.first_block, first);
  ASSERT_TRUE(router->Route(request).ok());
  router->SetDispatchDomain(1, domain);
  EXPECT_TRUE(router->attribution().Candidates(b0, first).empty());  // not before the insert
  router->CommitInsert(1);
  ASSERT_EQ(router->attribution().Candidates(b0, first).size(), 1u);
  const DomainRecord& record = router->attribution().Candidates(b0, first)[0];
  // The root MakePrefixKeyFromTokens chains from: its first block hash is ChainBlockHash(root,...).
  EXPECT_EQ(request::ChainBlockHash(record.root, std::span<const int32_t>(tokens).first(16)),
            request.key.block_hashes[0]);
  EXPECT_EQ(record.salt_fp, SaltFingerprint("s"));
  EXPECT_EQ(record.model_fp, ModelFingerprint("m"));
}

}  // namespace
}  // namespace warmroute::routing
