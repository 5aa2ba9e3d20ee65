#include "gateway/fleet/backends.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "core/routing/policies/policy_util.h"
#include "core/routing/policy_registry.h"
#include "gateway/config/config.h"

namespace warmroute::gateway {
namespace {

BackendConfig Backend(std::string_view json) {
  absl::StatusOr<BackendConfig> config = ParseBackendJson(json);
  EXPECT_TRUE(config.ok()) << config.status();
  return *config;
}

class BackendsTest : public testing::Test {
 protected:
  BackendsTest()
      : backends_(*routing::MakePolicy("round_robin", {}), routing::RouterOptions{}, clock_,
                  /*seed=*/1, EjectionOptions{}) {}

  routing::RoutingRequest Request(uint64_t id) {
    routing::RoutingRequest request;
    request.id = id;
    request.model = "m";
    request.prompt_tokens = 10;
    return request;
  }

  ManualClock clock_;
  Backends backends_;
};

TEST_F(BackendsTest, ReplaceSwapsTheBackendUnderItsName) {
  ASSERT_TRUE(backends_
                  .Add(Backend(R"({"name": "a", "url": "http://10.0.0.1:8000",
                                        "kv_capacity_tokens": 4096})"))
                  .ok());
  absl::StatusOr<std::shared_ptr<const BackendTarget>> replaced = backends_.Replace(
      Backend(R"({"name": "a", "url": "http://10.0.0.2:8000", "kv_capacity_tokens": 8192})"));
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_EQ((*replaced)->kv_capacity_tokens, 8192);
  const std::vector<BackendSnapshot> snapshot = backends_.Snapshot();
  ASSERT_EQ(snapshot.size(), 1u);
  EXPECT_EQ(snapshot[0].target->address, "10.0.0.2:8000");
  EXPECT_EQ(snapshot[0].kv_capacity_tokens, 8192);
  absl::StatusOr<Dispatch> dispatch = backends_.Route(Request(1));
  ASSERT_TRUE(dispatch.ok()) << dispatch.status();
  EXPECT_EQ(dispatch->target->id, (*replaced)->id);
}

TEST_F(BackendsTest, AReplacedDrainingBackendKeepsDraining) {
  ASSERT_TRUE(backends_.Add(Backend(R"({"name": "a", "url": "http://10.0.0.1:8000"})")).ok());
  ASSERT_TRUE(backends_.Add(Backend(R"({"name": "b", "url": "http://10.0.0.2:8000"})")).ok());
  ASSERT_TRUE(backends_.SetDraining("a", true).ok());
  ASSERT_TRUE(backends_
                  .Replace(Backend(R"({"name": "a", "url": "http://10.0.0.1:8000",
                                        "kv_capacity_tokens": 8192})"))
                  .ok());
  const std::vector<BackendSnapshot> snapshot = backends_.Snapshot();
  ASSERT_EQ(snapshot.size(), 2u);
  const auto a = std::find_if(snapshot.begin(), snapshot.end(),
                              [](const BackendSnapshot& b) { return b.target->name == "a"; });
  ASSERT_NE(a, snapshot.end());
  EXPECT_EQ(a->kv_capacity_tokens, 8192);  // the replacement
  EXPECT_EQ(a->state, "draining");
  EXPECT_FALSE(a->eligible);
  for (uint64_t id = 1; id <= 6; ++id) {
    absl::StatusOr<Dispatch> dispatch = backends_.Route(Request(id));
    ASSERT_TRUE(dispatch.ok()) << dispatch.status();
    EXPECT_EQ(dispatch->target->name, "b");
    backends_.OnFinished(id, std::nullopt);
  }
}

// A reload that changes a backend's traits (a discovered backend's pool, say) must not make a
// backend that has not passed a probe, or failed its last one, take requests; a new address is
// one no probe has reached yet.
TEST_F(BackendsTest, AReplacedBackendKeepsItsHealthAndANewAddressAwaitsItsFirstProbe) {
  auto a = backends_.Add(Backend(R"({"name": "a", "url": "http://10.0.0.1:8000"})"));
  auto b = backends_.Add(Backend(R"({"name": "b", "url": "http://10.0.0.2:8000"})"),
                         /*await_first_probe=*/true);
  auto c = backends_.Add(Backend(R"({"name": "c", "url": "http://10.0.0.3:8000"})"));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  backends_.OnProbe((*c)->id, false);
  ASSERT_TRUE(
      backends_.Replace(Backend(R"({"name": "b", "url": "http://10.0.0.2:8000", "pool": "p"})"))
          .ok());
  ASSERT_TRUE(
      backends_.Replace(Backend(R"({"name": "c", "url": "http://10.0.0.3:8000", "pool": "p"})"))
          .ok());
  auto moved = backends_.Replace(Backend(R"({"name": "a", "url": "http://10.0.0.4:8000"})"));
  ASSERT_TRUE(moved.ok());
  auto d = backends_.Add(Backend(R"({"name": "d", "url": "http://10.0.0.5:8000"})"));
  ASSERT_TRUE(d.ok());
  std::map<std::string, std::string> states;
  for (const BackendSnapshot& s : backends_.Snapshot()) states[s.target->name] = s.state;
  EXPECT_EQ(states["a"], "probe_pending");
  EXPECT_EQ(states["b"], "probe_pending");
  EXPECT_EQ(states["c"], "probe_failed");
  for (uint64_t id = 1; id <= 6; ++id) {
    absl::StatusOr<Dispatch> dispatch = backends_.Route(Request(id));
    ASSERT_TRUE(dispatch.ok()) << dispatch.status();
    EXPECT_EQ(dispatch->target->name, "d");
    backends_.OnFinished(id, std::nullopt);
  }
  backends_.OnProbe((*moved)->id, true);
  std::set<std::string> served;
  for (uint64_t id = 7; id <= 12; ++id) {
    absl::StatusOr<Dispatch> dispatch = backends_.Route(Request(id));
    ASSERT_TRUE(dispatch.ok()) << dispatch.status();
    served.insert(dispatch->target->name);
    backends_.OnFinished(id, std::nullopt);
  }
  EXPECT_EQ(served, (std::set<std::string>{"a", "d"}));
}

TEST_F(BackendsTest, ReplaceKeepsTheOldBackendWhenTheAddressIsTaken) {
  ASSERT_TRUE(backends_.Add(Backend(R"({"name": "a", "url": "http://10.0.0.1:8000"})")).ok());
  ASSERT_TRUE(backends_.Add(Backend(R"({"name": "b", "url": "http://10.0.0.2:8000"})")).ok());
  EXPECT_EQ(
      backends_.Replace(Backend(R"({"name": "a", "url": "http://10.0.0.2:8000"})")).status().code(),
      absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(
      backends_.Replace(Backend(R"({"name": "c", "url": "http://10.0.0.3:8000"})")).status().code(),
      absl::StatusCode::kNotFound);
  const std::vector<std::shared_ptr<const BackendTarget>> targets = backends_.Targets();
  ASSERT_EQ(targets.size(), 2u);
  EXPECT_EQ(targets[0]->name, "a");
  EXPECT_EQ(targets[0]->address, "10.0.0.1:8000");
}

TEST_F(BackendsTest, ProbeFailuresSkipTheFailingBackendButNeverRefuseEveryRequest) {
  auto a = backends_.Add(Backend(R"({"name": "a", "url": "http://10.0.0.1:8000"})"));
  auto b = backends_.Add(Backend(R"({"name": "b", "url": "http://10.0.0.2:8000"})"));
  ASSERT_TRUE(a.ok() && b.ok());
  backends_.OnProbe((*a)->id, false);
  for (uint64_t id = 1; id <= 4; ++id) {
    absl::StatusOr<Dispatch> d = backends_.Route(Request(id));
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->target->name, "b") << "a failed its probe";
  }
  // Both down: panic mode routes to both rather than refusing.
  backends_.OnProbe((*b)->id, false);
  std::set<std::string> used;
  for (uint64_t id = 5; id <= 8; ++id) {
    absl::StatusOr<Dispatch> d = backends_.Route(Request(id));
    ASSERT_TRUE(d.ok()) << d.status();
    used.insert(d->target->name);
  }
  EXPECT_EQ(used, (std::set<std::string>{"a", "b"}));
  for (const BackendSnapshot& s : backends_.Snapshot()) EXPECT_FALSE(s.eligible);
  // One back: only it gets requests again.
  backends_.OnProbe((*b)->id, true);
  for (uint64_t id = 9; id <= 12; ++id) {
    absl::StatusOr<Dispatch> d = backends_.Route(Request(id));
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->target->name, "b");
  }
  // Draining is not health: a fleet whose only backend drains refuses.
  ASSERT_TRUE(backends_.Remove("a").ok());
  ASSERT_TRUE(backends_.SetDraining("b", true).ok());
  EXPECT_EQ(backends_.Route(Request(13)).status().code(), absl::StatusCode::kUnavailable);
}

// OnUpstreamResult skips the lock for a success while no backend has a failure on record: the
// successes that do change a record must still reach it.
TEST_F(BackendsTest, PassiveSuccessesThatChangeARecordAreNotSkipped) {
  auto a = backends_.Add(Backend(R"({"name": "a", "url": "http://10.0.0.1:8000"})"));
  auto b = backends_.Add(Backend(R"({"name": "b", "url": "http://10.0.0.2:8000"})"));
  ASSERT_TRUE(a.ok() && b.ok());
  const routing::BackendId id = (*a)->id;
  auto state_of_a = [&] { return backends_.Snapshot()[0].state; };
  // A success breaks a run of failures (EjectionOptions{}: ejected after 3 in a row).
  backends_.OnUpstreamResult((*b)->id, true);
  backends_.OnUpstreamResult(id, false);
  backends_.OnUpstreamResult(id, false);
  backends_.OnUpstreamResult(id, true);
  backends_.OnUpstreamResult(id, false);
  backends_.OnUpstreamResult(id, false);
  EXPECT_EQ(state_of_a(), "up") << "the success between the failures was lost";
  backends_.OnUpstreamResult(id, false);
  EXPECT_EQ(state_of_a(), "ejected");
  // Re-admitted on probation (its failure count is back to 0): a success ends the probation.
  clock_.Advance(std::chrono::seconds(1));
  EXPECT_EQ(state_of_a(), "up");
  backends_.OnUpstreamResult(id, true);
  backends_.OnUpstreamResult(id, false);
  EXPECT_EQ(state_of_a(), "up") << "the success that ended the probation was lost";
  // A removed backend's record no longer counts, and a new one starts clean.
  ASSERT_TRUE(backends_.Remove("a").ok());
  auto c = backends_.Add(Backend(R"({"name": "c", "url": "http://10.0.0.3:8000"})"));
  ASSERT_TRUE(c.ok());
  backends_.OnUpstreamResult((*c)->id, false);
  backends_.OnUpstreamResult((*c)->id, false);
  backends_.OnUpstreamResult((*c)->id, true);
  backends_.OnUpstreamResult((*c)->id, false);
  backends_.OnUpstreamResult((*c)->id, false);
  EXPECT_EQ(backends_.Snapshot()[1].state, "up");
}

// [ts, [["BlockStored", [hash], nil, tokens first..first+15, 16]]]: the array form of one stored
// first block. REQUIRES: hash and tokens < 128 (positive fixints).
std::string StoredFirstBlock(uint8_t hash, char first) {
  std::string out(
      "\x92\xcb\x3f\xf0\0\0\0\0\0\0\x91\x95\xab"
      "BlockStored",
      24);
  out += '\x91';
  out += static_cast<char>(hash);  // a positive fixint
  out += '\xc0';
  out += std::string("\xdc\x00\x10", 3);
  for (char t = first; t < first + 16; ++t) out += t;
  out += '\x10';
  return out;
}

TEST_F(BackendsTest, ANotedDispatchDomainLetsKvEventsAttributeTheFirstBlock) {
  absl::StatusOr<std::shared_ptr<const BackendTarget>> a =
      backends_.Add(Backend(R"({"name": "a", "url": "http://10.0.0.1:8000",
                  "kv_events": {"endpoint": "tcp://10.0.0.1:5557"}})"));
  ASSERT_TRUE(a.ok());
  std::vector<int32_t> tokens(16);
  for (int32_t i = 0; i < 16; ++i) tokens[static_cast<size_t>(i)] = i + 1;
  routing::RoutingRequest request = Request(7);
  request.key = routing::MakePrefixKeyFromTokens("m", "", tokens, {.block_tokens = 16});
  backends_.NoteDispatchDomain(7, routing::DomainOfTokenPrompt("m", "", "", tokens, 16));
  ASSERT_TRUE(backends_.Route(request).ok());
  backends_.CommitInsert(7);
  backends_.OnFinished(7, 0);

  kv_events::BackendEventFeed feed((*a)->id, {.block_size = 16});
  feed.OnLive(0, StoredFirstBlock(101, 1), clock_.Now());
  ASSERT_EQ(backends_.ApplyKvEvents((*a)->id, feed), std::optional<int64_t>(0));
  EXPECT_EQ(feed.blocks(), 1u);  // attributed to the noted domain, indexed
  EXPECT_EQ(feed.writer_counters().unattributed_blocks, 0);
  std::vector<BackendSnapshot> snapshot = backends_.Snapshot();
  EXPECT_EQ(snapshot[0].kv_event_state, routing::KvEventState::kPrecise);
  EXPECT_TRUE(snapshot[0].kv_events.subscribed);
  EXPECT_EQ(snapshot[0].kv_events.counters.applied, 1);

  // A request routed without a note: its stored first block has no domain, and is not indexed.
  std::vector<int32_t> other(16);
  for (int32_t i = 0; i < 16; ++i) other[static_cast<size_t>(i)] = i + 17;
  routing::RoutingRequest unnoted = Request(8);
  unnoted.key = routing::MakePrefixKeyFromTokens("m", "", other, {.block_tokens = 16});
  ASSERT_TRUE(backends_.Route(unnoted).ok());
  backends_.CommitInsert(8);
  backends_.OnFinished(8, 0);
  feed.OnLive(1, StoredFirstBlock(102, 17), clock_.Now());
  ASSERT_TRUE(backends_.ApplyKvEvents((*a)->id, feed).has_value());
  EXPECT_EQ(feed.blocks(), 1u);
  EXPECT_EQ(feed.writer_counters().unattributed_blocks, 1);

  backends_.EndKvEvents((*a)->id);
  EXPECT_EQ(backends_.Snapshot()[0].kv_event_state, routing::KvEventState::kNone);

  // A removed backend's feed is told to go.
  ASSERT_TRUE(backends_.Remove("a").ok());
  EXPECT_EQ(backends_.ApplyKvEvents((*a)->id, feed), std::nullopt);
}

// A backend of two data-parallel ranks, each a routing target of its own (rank_targets.h).
constexpr std::string_view kTwoRanks = R"({"name": "a", "url": "http://10.0.0.1:8000",
    "kv_events": {"endpoint": "tcp://10.0.0.1:5557", "dp_ranks": 2}})";

std::set<std::string> RoutedNames(Backends& backends, uint64_t first, int requests) {
  std::set<std::string> names;
  for (uint64_t id = first; id < first + static_cast<uint64_t>(requests); ++id) {
    routing::RoutingRequest request;
    request.id = id;
    request.model = "m";
    request.prompt_tokens = 10;
    absl::StatusOr<Dispatch> d = backends.Route(request);
    if (!d.ok()) continue;
    names.insert(d->target->name);
    backends.OnFinished(id, std::nullopt);
  }
  return names;
}

TEST_F(BackendsTest, EachRankIsARoutingTargetWithTheBackendsAddressAndItsRank) {
  absl::StatusOr<std::shared_ptr<const BackendTarget>> a = backends_.Add(Backend(
      R"({"name": "a", "url": "http://10.0.0.1:8000", "kv_capacity_tokens": 1001,
          "kv_events": {"endpoint": "tcp://10.0.0.1:5557", "dp_ranks": 2}})"));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ((*a)->rank_targets.size(), 2u);
  EXPECT_EQ((*a)->rank_targets[0], (*a)->id);
  EXPECT_EQ((*a)->dp_rank, -1);
  EXPECT_EQ(backends_.Targets().size(), 1u);  // the backend, once

  for (int r = 0; r < 2; ++r) {
    const std::shared_ptr<const BackendTarget> rank =
        backends_.RoutingTarget((*a)->rank_targets[static_cast<size_t>(r)]);
    ASSERT_NE(rank, nullptr);
    EXPECT_EQ(rank->name, "a/rank" + std::to_string(r));
    EXPECT_EQ(rank->dp_rank, r);
    EXPECT_EQ(rank->url, "http://10.0.0.1:8000");
    EXPECT_EQ(rank->address, "10.0.0.1:8000");  // the backend's connection pool
    EXPECT_EQ(backends_.FindByNameHash(routing::NameHash(rank->name)), rank->id);
  }
  EXPECT_EQ(RoutedNames(backends_, 1, 4), (std::set<std::string>{"a/rank0", "a/rank1"}));

  const std::vector<BackendSnapshot> snapshot = backends_.Snapshot();
  ASSERT_EQ(snapshot.size(), 1u);
  ASSERT_EQ(snapshot[0].ranks.size(), 2u);
  EXPECT_EQ(snapshot[0].ranks[0].kv_capacity_tokens, 501);  // the configured 1001, split
  EXPECT_EQ(snapshot[0].ranks[1].kv_capacity_tokens, 500);
  EXPECT_EQ(snapshot[0].kv_capacity_tokens, 1001);
  EXPECT_EQ(snapshot[0].dispatched_total, 4);
  EXPECT_EQ(snapshot[0].ranks[0].dispatched_total + snapshot[0].ranks[1].dispatched_total, 4);
}

TEST_F(BackendsTest, WithoutRouteRanksTheRanksAreOneTarget) {
  ASSERT_TRUE(backends_
                  .Add(Backend(R"({"name": "a", "url": "http://10.0.0.1:8000",
                      "kv_events": {"endpoint": "tcp://10.0.0.1:5557", "dp_ranks": 2,
                                    "route_ranks": false}})"))
                  .ok());
  EXPECT_TRUE(backends_.Targets()[0]->rank_targets.empty());
  EXPECT_EQ(RoutedNames(backends_, 1, 4), (std::set<std::string>{"a"}));
  EXPECT_TRUE(backends_.Snapshot()[0].ranks.empty());
}

TEST_F(BackendsTest, HealthDrainingAndRemovalActOnEveryRank) {
  absl::StatusOr<std::shared_ptr<const BackendTarget>> a = backends_.Add(Backend(kTwoRanks));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(backends_.Add(Backend(R"({"name": "b", "url": "http://10.0.0.2:8000"})")).ok());
  const routing::BackendId rank1 = (*a)->rank_targets[1];

  // Failures of rank 1's dispatches eject the backend: neither rank takes requests.
  for (int i = 0; i < EjectionOptions{}.eject_after_failures; ++i) {
    backends_.OnUpstreamResult(rank1, false);
  }
  EXPECT_EQ(backends_.Snapshot()[0].state, "ejected");
  EXPECT_EQ(RoutedNames(backends_, 1, 6), (std::set<std::string>{"b"}));
  clock_.Advance(std::chrono::seconds(2));  // the ejection ends
  EXPECT_EQ(RoutedNames(backends_, 10, 6), (std::set<std::string>{"a/rank0", "a/rank1", "b"}));

  backends_.OnProbe((*a)->id, false);  // the backend's probe
  EXPECT_EQ(RoutedNames(backends_, 20, 6), (std::set<std::string>{"b"}));
  backends_.OnProbe((*a)->id, true);
  ASSERT_TRUE(backends_.SetDraining("a", true).ok());
  EXPECT_EQ(RoutedNames(backends_, 30, 6), (std::set<std::string>{"b"}));
  ASSERT_TRUE(backends_.SetDraining("a", false).ok());

  ASSERT_TRUE(backends_.Remove("a").ok());
  EXPECT_EQ(RoutedNames(backends_, 40, 6), (std::set<std::string>{"b"}));
  EXPECT_EQ(backends_.RoutingTarget(rank1), nullptr);
  EXPECT_FALSE(backends_.FindByNameHash(routing::NameHash("a/rank1")).has_value());
}

TEST_F(BackendsTest, ARetryLeavesTheFailedRanksBackendNotOnlyTheRank) {
  absl::StatusOr<std::shared_ptr<const BackendTarget>> a = backends_.Add(Backend(
      R"({"name": "a", "url": "http://10.0.0.1:8000",
          "kv_events": {"endpoint": "tcp://10.0.0.1:5557", "dp_ranks": 4}})"));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(backends_.Add(Backend(R"({"name": "b", "url": "http://10.0.0.2:8000"})")).ok());
  // Round robin from each rank of `a`: the alternates are the next targets in id order, its
  // other ranks first. They are the same server as the one that failed: the retry goes to b.
  int from_a = 0;
  for (uint64_t id = 1; id <= 10; ++id) {
    absl::StatusOr<Dispatch> d = backends_.Route(Request(id));
    ASSERT_TRUE(d.ok()) << d.status();
    if (d->target->dp_rank < 0) {
      backends_.OnFinished(id, std::nullopt);
      continue;
    }
    ++from_a;
    std::optional<Dispatch> next = backends_.Reroute(id);
    ASSERT_TRUE(next.has_value()) << "from " << d->target->name;
    EXPECT_EQ(next->target->name, "b") << "from " << d->target->name;
    backends_.OnFinished(id, std::nullopt);
  }
  EXPECT_EQ(from_a, 8);
}

TEST_F(BackendsTest, EachRankGetsItsEngineCoresLoadAndCapacity) {
  absl::StatusOr<std::shared_ptr<const BackendTarget>> a = backends_.Add(Backend(kTwoRanks));
  ASSERT_TRUE(a.ok()) << a.status();
  ScrapedEngineMetrics scrape;
  scrape.sample = {.num_running = 3, .num_waiting = 1, .kv_usage = 0.5, .scraped_at = {}};
  scrape.kv_capacity_tokens = 3000;
  scrape.cores = {
      {.engine = "0",
       .sample = {.num_running = 1, .num_waiting = 0, .kv_usage = 0.25, .scraped_at = {}},
       .kv_capacity_tokens = 1000},
      {.engine = "1",
       .sample = {.num_running = 2, .num_waiting = 1, .kv_usage = 0.75, .scraped_at = {}},
       .kv_capacity_tokens = 2000}};
  backends_.OnMetrics((*a)->id, scrape);
  BackendSnapshot snap = backends_.Snapshot()[0];
  ASSERT_EQ(snap.ranks.size(), 2u);
  EXPECT_EQ(snap.ranks[0].kv_capacity_tokens, 1000);
  EXPECT_EQ(snap.ranks[1].kv_capacity_tokens, 2000);
  ASSERT_TRUE(snap.ranks[1].metrics.has_value());
  EXPECT_EQ(snap.ranks[1].metrics->num_running, 2);
  EXPECT_DOUBLE_EQ(snap.ranks[1].metrics->kv_usage, 0.75);
  EXPECT_EQ(snap.kv_capacity_tokens, 3000);
  ASSERT_TRUE(snap.metrics.has_value());
  EXPECT_EQ(snap.metrics->num_running, 3);  // the whole scrape

  scrape.cores.clear();  // per-core series unknown: the backend's, split evenly
  backends_.OnMetrics((*a)->id, scrape);
  snap = backends_.Snapshot()[0];
  EXPECT_EQ(snap.ranks[0].kv_capacity_tokens, 1500);
  EXPECT_EQ(snap.ranks[0].metrics->num_running, 2);
  EXPECT_EQ(snap.ranks[1].metrics->num_running, 1);
}

}  // namespace
}  // namespace warmroute::gateway
