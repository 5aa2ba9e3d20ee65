#include "core/routing/prewarm_planner.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "core/routing/policies/policy_test_util.h"
#include "core/routing/policy_registry.h"
#include "gtest/gtest.h"

namespace warmroute::routing {
namespace {

using testing::Chain;
using testing::Request;
using Planner = PrewarmPlanner<std::string>;

class PrewarmPlannerTest : public ::testing::Test {
 protected:
  void MakeRouter(int backends) {
    router_ =
        std::make_unique<Router>(MakePolicy("warmroute", {}).value(), RouterOptions{}, clock_, 1);
    for (int i = 0; i < backends; ++i) router_->AddBackend({.name = "r" + std::to_string(i)});
  }
  // Routes a client request for prefix `seed` and finishes it (its chain stays in the index).
  BackendId Serve(uint64_t seed, std::optional<BackendId> pinned = std::nullopt) {
    RoutingRequest request = Request(next_id_++, Chain(seed, 80), 1280);
    if (pinned) {
      request.placement = Placement::kPinned;
      request.pinned = *pinned;
    }
    const BackendId b = router_->Route(request).value().backend;
    router_->CommitInsert(request.id);
    router_->OnFinished(request.id, std::nullopt);
    return b;
  }
  std::vector<Planner::Job> DrainAll(Planner& planner) {
    std::vector<Planner::Job> jobs;
    while (std::optional<Planner::Job> job = planner.Next(*router_, clock_.Now())) {
      planner.OnDone(*job);
      jobs.push_back(std::move(*job));
      clock_.Advance(std::chrono::seconds(1));
    }
    return jobs;
  }

  ManualClock clock_;
  std::unique_ptr<Router> router_;
  uint64_t next_id_ = 1;
};

PrewarmOptions Unpaced() {
  return PrewarmOptions{.max_prefixes = 64,
                        .max_tokens_per_s = 1e9,
                        .max_in_flight = 64,
                        .max_target_queue_tokens = 1'000'000};
}

// Count asks for a sample when a prefix has none or its sample is sample_refresh old; a prefix
// counted but never kept is not planned (there is nothing to send).
TEST_F(PrewarmPlannerTest, CountAsksForASampleOnlyNowAndThen) {
  MakeRouter(1);
  PrewarmOptions options = Unpaced();
  options.join_homes = 8;
  options.sample_refresh = std::chrono::seconds(10);
  options.min_sample_requests = 2;
  Planner planner(options);
  const RoutingRequest r = Request(0, Chain(1, 80), 1280);
  const RoutingRequest unsampled = Request(0, Chain(2, 80), 1280);
  EXPECT_FALSE(planner.Count(r, clock_.Now()));  // seen once: no hot prefix yet
  EXPECT_TRUE(planner.Count(r, clock_.Now()));
  EXPECT_TRUE(planner.Count(r, clock_.Now()));  // still none kept
  planner.Keep(r, "first", clock_.Now());
  EXPECT_FALSE(planner.Count(r, clock_.Now()));
  clock_.Advance(std::chrono::seconds(9));
  EXPECT_FALSE(planner.Count(r, clock_.Now()));
  clock_.Advance(std::chrono::seconds(1));
  EXPECT_TRUE(planner.Count(r, clock_.Now()));
  planner.Keep(r, "second", clock_.Now());
  EXPECT_FALSE(planner.Count(unsampled, clock_.Now()));
  EXPECT_TRUE(planner.Count(unsampled, clock_.Now()));
  const BackendId joined = router_->AddBackend({.name = "r1"});
  planner.PlanJoin(*router_, joined, clock_.Now());
  const std::vector<Planner::Job> jobs = DrainAll(planner);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].payload, "second");
  EXPECT_EQ(jobs[0].prefix, PrewarmPrefixId(r.key, options.id_blocks));
}

TEST_F(PrewarmPlannerTest, JoinPlansExactlyThePrefixesWhoseHomesIncludeTheNewBackend) {
  MakeRouter(4);
  Planner planner(Unpaced());
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const RoutingRequest r = Request(0, Chain(seed, 80), 1280);
    planner.Observe(r, "body" + std::to_string(seed), clock_.Now());
  }
  const BackendId joined = router_->AddBackend({.name = "r4"});
  planner.PlanJoin(*router_, joined, clock_.Now());
  const std::vector<Planner::Job> jobs = DrainAll(planner);
  std::set<uint64_t> planned;
  for (const Planner::Job& job : jobs) {
    EXPECT_EQ(job.target, joined);
    EXPECT_EQ(job.reason, PrewarmReason::kJoin);
    EXPECT_EQ(job.request.placement, Placement::kPinned);
    EXPECT_EQ(job.request.pinned, joined);
    EXPECT_EQ(job.request.max_tokens, 1);
    EXPECT_FALSE(job.request.stream);
    planned.insert(job.prefix);
  }
  // warmroute's 3 homes among 5 backends: the new one is a home of about 3/5 of the prefixes.
  EXPECT_GT(planned.size(), 10u);
  EXPECT_LT(planned.size(), 40u);
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const RoutingRequest r = Request(0, Chain(seed, 80), 1280);
    const std::vector<BackendId> homes = router_->Homes(r);
    const bool home = std::find(homes.begin(), homes.end(), joined) != homes.end();
    EXPECT_EQ(planned.contains(PrewarmPrefixId(r.key, 64)), home) << "prefix " << seed;
  }
  // The payload travels with the job.
  for (const Planner::Job& job : jobs) EXPECT_EQ(job.payload.rfind("body", 0), 0u);
}

TEST_F(PrewarmPlannerTest, HandoffMovesOnlyWhatTheLeavingBackendAloneHolds) {
  MakeRouter(3);
  Planner planner(Unpaced());
  Serve(1, 0);  // prefix 1 on r0 only
  Serve(2, 0);  // prefix 2 on r0 and r1
  Serve(2, 1);
  Serve(3, 1);  // prefix 3 on r1 only
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    planner.Observe(Request(0, Chain(seed, 80), 1280), "p" + std::to_string(seed), clock_.Now());
  }
  const RoutingRequest one = Request(0, Chain(1, 80), 1280);
  std::vector<BackendId> homes = router_->Homes(one);
  planner.PlanHandoff(*router_, 0, clock_.Now());
  router_->RemoveBackend(0);
  const std::vector<Planner::Job> jobs = DrainAll(planner);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].payload, "p1");
  EXPECT_EQ(jobs[0].reason, PrewarmReason::kHandoff);
  homes.erase(std::remove(homes.begin(), homes.end(), BackendId{0}), homes.end());
  ASSERT_FALSE(homes.empty());
  EXPECT_EQ(jobs[0].target, homes.front());
}

// Backends that leave together (the gateway's data-parallel ranks of one server: r0, r1, r2)
// hand off what they hold between them to a backend that stays, never to one another.
TEST_F(PrewarmPlannerTest, BackendsLeavingTogetherHandOffToTheBackendsThatStay) {
  MakeRouter(5);
  Planner planner(Unpaced());
  const std::vector<BackendId> leaving = {0, 1, 2};
  constexpr uint64_t kPrefixes = 30;
  for (uint64_t seed = 1; seed <= kPrefixes; ++seed) {
    Serve(seed, leaving[seed % 3]);
    Serve(seed, leaving[(seed + 1) % 3]);
    planner.Observe(Request(0, Chain(seed, 80), 1280), "p" + std::to_string(seed), clock_.Now());
  }
  Serve(kPrefixes + 1, 0);  // held by r3 too: no handoff
  Serve(kPrefixes + 1, 3);
  planner.Observe(Request(0, Chain(kPrefixes + 1, 80), 1280), "held", clock_.Now());
  planner.PlanHandoff(*router_, leaving, clock_.Now());
  for (BackendId b : leaving) router_->RemoveBackend(b);
  const std::vector<Planner::Job> jobs = DrainAll(planner);
  ASSERT_EQ(jobs.size(), kPrefixes);
  for (const Planner::Job& job : jobs) {
    EXPECT_EQ(job.reason, PrewarmReason::kHandoff);
    EXPECT_TRUE(job.target == 3 || job.target == 4) << job.payload << " to " << job.target;
  }
  EXPECT_EQ(planner.counters().dropped_gone, 0);
}

TEST_F(PrewarmPlannerTest, ARoutedJobMakesTheTargetHoldThePrefixForTheNextClientRequest) {
  MakeRouter(3);
  Planner planner(Unpaced());
  Serve(7, 0);
  planner.Observe(Request(0, Chain(7, 80), 1280), "p7", clock_.Now());
  planner.PlanHandoff(*router_, 0, clock_.Now());
  router_->RemoveBackend(0);
  std::optional<Planner::Job> job = planner.Next(*router_, clock_.Now());
  ASSERT_TRUE(job.has_value());
  job->request.id = 1000;
  ASSERT_EQ(router_->Route(job->request).value().backend, job->target);
  router_->CommitInsert(1000);
  router_->OnFinished(1000, 0);
  planner.OnDone(*job);
  // The next client request of the prefix is routed to the target, as a hit.
  RoutingRequest client = Request(next_id_++, Chain(7, 80), 1280);
  const Decision d = router_->Route(client).value();
  EXPECT_EQ(d.backend, job->target);
  EXPECT_EQ(d.reason, Reason::kCacheHit);
}

TEST_F(PrewarmPlannerTest, KeepsTheHottestPrefixesWhenFull) {
  MakeRouter(2);
  PrewarmOptions options = Unpaced();
  options.max_prefixes = 2;
  Planner planner(options);
  for (int i = 0; i < 5; ++i) planner.Observe(Request(0, Chain(1, 80), 1280), "hot", clock_.Now());
  planner.Observe(Request(0, Chain(2, 80), 1280), "cold", clock_.Now());
  planner.Observe(Request(0, Chain(3, 80), 1280), "new", clock_.Now());  // replaces "cold"
  // Every prefix held by r0 alone: the handoff lists what is kept, hottest first.
  for (uint64_t seed = 1; seed <= 3; ++seed) Serve(seed, 0);
  planner.PlanHandoff(*router_, 0, clock_.Now());
  const std::vector<Planner::Job> jobs = DrainAll(planner);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].payload, "hot");
  EXPECT_EQ(jobs[1].payload, "new");
}

// An evicted prefix's sample is released at once, not when its slot is next sampled: a prefix
// that replaces it and is never sampled (seen once) must not keep the old prompt in memory.
TEST_F(PrewarmPlannerTest, EvictionReleasesTheEvictedSample) {
  PrewarmOptions options = Unpaced();
  options.max_prefixes = 1;
  PrewarmPlanner<std::shared_ptr<std::string>> planner(options);
  auto sample = std::make_shared<std::string>("prompt");
  const std::weak_ptr<std::string> watch = sample;
  planner.Observe(Request(0, Chain(1, 80), 1280), sample, clock_.Now());
  sample.reset();
  ASSERT_FALSE(watch.expired());  // kept as prefix 1's sample
  // Prefix 2 evicts prefix 1; its caller does not Keep (it would copy the body only then).
  EXPECT_TRUE(planner.Count(Request(0, Chain(2, 80), 1280), clock_.Now()));
  EXPECT_TRUE(watch.expired());
}

TEST_F(PrewarmPlannerTest, RatesDecaySoARecentPrefixOvertakesAnOldOne) {
  MakeRouter(2);
  PrewarmOptions options = Unpaced();
  options.half_life = std::chrono::seconds(10);
  Planner planner(options);
  for (int i = 0; i < 4; ++i) planner.Observe(Request(0, Chain(1, 80), 1280), "old", clock_.Now());
  clock_.Advance(std::chrono::seconds(30));  // 4 -> 0.5
  planner.Observe(Request(0, Chain(2, 80), 1280), "recent", clock_.Now());
  Serve(1, 0);
  Serve(2, 0);
  planner.PlanHandoff(*router_, 0, clock_.Now());
  const std::vector<Planner::Job> jobs = DrainAll(planner);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].payload, "recent");
}

TEST_F(PrewarmPlannerTest, PacingHoldsJobsBackByTokensInFlightAndTargetQueue) {
  MakeRouter(4);
  PrewarmOptions options;
  options.max_tokens_per_s = 2000;  // jobs of 1280 tokens
  options.max_in_flight = 2;
  options.max_target_queue_tokens = 100;
  Planner planner(options);
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    Serve(seed, 0);
    planner.Observe(Request(0, Chain(seed, 80), 1280), "p", clock_.Now());
  }
  planner.PlanHandoff(*router_, 0, clock_.Now());
  router_->RemoveBackend(0);
  ASSERT_EQ(planner.pending(), 6u);
  std::optional<Planner::Job> first = planner.Next(*router_, clock_.Now());
  ASSERT_TRUE(first.has_value());
  // 720 tokens left in the bucket: another job may go, but not to the same target.
  std::optional<Planner::Job> second = planner.Next(*router_, clock_.Now());
  if (second) {
    EXPECT_NE(second->target, first->target);
  }
  // The bucket is empty now (or the only other targets are busy): nothing more at this instant.
  EXPECT_FALSE(planner.Next(*router_, clock_.Now()).has_value());
  planner.OnDone(*first);
  if (second) planner.OnDone(*second);
  EXPECT_FALSE(planner.Next(*router_, clock_.Now()).has_value());  // bucket still below zero
  clock_.Advance(std::chrono::seconds(2));
  // A target with client prefill queued gets nothing.
  RoutingRequest busy = Request(next_id_++, Chain(99, 80), 1280);
  busy.placement = Placement::kPinned;
  busy.pinned = 1;
  ASSERT_TRUE(router_->Route(busy).ok());
  int sent = 0;
  while (std::optional<Planner::Job> job = planner.Next(*router_, clock_.Now())) {
    EXPECT_NE(job->target, 1u);
    planner.OnDone(*job);
    ++sent;
    clock_.Advance(std::chrono::seconds(2));
  }
  EXPECT_GE(sent, 1);
}

TEST_F(PrewarmPlannerTest, DropsJobsWhoseTargetIsWarmGoneOrThatWaitedTooLong) {
  MakeRouter(4);
  Planner planner(Unpaced());
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    planner.Observe(Request(0, Chain(seed, 80), 1280), "p", clock_.Now());
  }
  const BackendId joined = router_->AddBackend({.name = "r4"});
  planner.PlanJoin(*router_, joined, clock_.Now());
  const size_t planned = planner.pending();
  ASSERT_GT(planned, 2u);
  router_->RemoveBackend(joined);
  EXPECT_FALSE(planner.Next(*router_, clock_.Now()).has_value());
  EXPECT_EQ(planner.counters().dropped_gone, static_cast<int64_t>(planned));
  EXPECT_EQ(planner.pending(), 0u);

  const BackendId again = router_->AddBackend({.name = "r5"});
  planner.PlanJoin(*router_, again, clock_.Now());
  ASSERT_GT(planner.pending(), 0u);
  clock_.Advance(std::chrono::seconds(61));
  EXPECT_FALSE(planner.Next(*router_, clock_.Now()).has_value());
  EXPECT_GT(planner.counters().dropped_stale, 0);

  planner.PlanJoin(*router_, again, clock_.Now());
  const size_t replanned = planner.pending();
  for (uint64_t seed = 1; seed <= 30; ++seed) Serve(seed, again);
  EXPECT_FALSE(planner.Next(*router_, clock_.Now()).has_value());
  EXPECT_EQ(planner.counters().dropped_warm, static_cast<int64_t>(replanned));
}

TEST_F(PrewarmPlannerTest, APlanFillsATargetUpToItsShareOfKvCapacity) {
  MakeRouter(1);
  Planner planner(Unpaced());
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    planner.Observe(Request(0, Chain(seed, 80), 1280), "p", clock_.Now());
  }
  // Two backends: the new one is a home of every prefix. 0.5 x 6,000 tokens: two jobs of 1,280.
  const BackendId joined = router_->AddBackend({.name = "r1", .kv_capacity_tokens = 6000});
  planner.PlanJoin(*router_, joined, clock_.Now());
  EXPECT_EQ(planner.pending(), 2u);
}

TEST_F(PrewarmPlannerTest, JoinHomesLimitsWhichHomesOfAPrefixCountForAJoin) {
  MakeRouter(4);
  std::vector<size_t> planned;
  for (int join_homes : {0, 1, 3}) {
    PrewarmOptions options = Unpaced();
    options.join_homes = join_homes;
    Planner planner(options);
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      planner.Observe(Request(0, Chain(seed, 80), 1280), "p", clock_.Now());
    }
    const BackendId joined = router_->AddBackend({.name = "j" + std::to_string(join_homes)});
    planner.PlanJoin(*router_, joined, clock_.Now());
    planned.push_back(planner.pending());
    router_->RemoveBackend(joined);
  }
  EXPECT_EQ(planned[0], 0u);  // 0: no prewarm on a join
  EXPECT_GT(planned[1], 0u);  // the first home of about 1/5 of the prefixes
  EXPECT_GT(planned[2], planned[1]);
}

TEST(PrewarmPrefixIdTest, IsTheChainHashAtTheIdDepth) {
  PrefixKey key;
  key.block_hashes = {11, 22, 33};
  EXPECT_EQ(PrewarmPrefixId(key, 2), 22u);
  EXPECT_EQ(PrewarmPrefixId(key, 64), 33u);
  EXPECT_EQ(PrewarmPrefixId(PrefixKey{}, 64), 0u);
}

}  // namespace
}  // namespace warmroute::routing
