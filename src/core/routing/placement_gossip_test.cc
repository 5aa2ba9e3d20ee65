#include "core/routing/placement_gossip.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "core/routing/policies/policy_test_util.h"
#include "core/routing/policy_registry.h"
#include "core/routing/router.h"
#include "gtest/gtest.h"

namespace warmroute::routing {
namespace {

using testing::Chain;
using testing::Request;

class GossipTest : public ::testing::Test {
 protected:
  // A router with backends r0..r{n-1}, as each gateway replica has them.
  std::unique_ptr<Router> MakeRouter(int n, std::string_view policy = "warmroute") {
    auto router =
        std::make_unique<Router>(MakePolicy(policy, {}).value(), RouterOptions{}, clock_, 1);
    for (int i = 0; i < n; ++i) router->AddBackend({.name = "r" + std::to_string(i)});
    return router;
  }
  ManualClock clock_;
};

TEST_F(GossipTest, PlacementsAndTheLoadTableRoundTrip) {
  GossipOutbox outbox(/*sender=*/42, GossipOptions{});
  const std::vector<uint64_t> chain = Chain(7, 30);
  const DispatchDomain domain = {.first_block = 11,
                                 .record = {.root = 12, .model_fp = 13, .salt_fp = 0}};
  outbox.Add("r1", chain, domain);
  outbox.Add("r0", std::vector<uint64_t>{});
  const std::vector<PeerBackendLoad> load = {{.backend = "r1",
                                              .load = {.in_flight = 3,
                                                       .outstanding_prefill_tokens = 9000,
                                                       .running_decodes = 2,
                                                       .decode_context_tokens = 5000}}};
  const std::vector<std::string> datagrams = outbox.Take(load);
  ASSERT_EQ(datagrams.size(), 1u);
  EXPECT_EQ(outbox.pending(), 0u);
  absl::StatusOr<GossipMessage> m = DecodeGossip(datagrams[0]);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->sender, 42u);
  EXPECT_EQ(m->sequence, 0u);
  ASSERT_EQ(m->placements.size(), 2u);
  EXPECT_EQ(m->placements[0].backend, "r1");
  EXPECT_EQ(m->placements[0].chain, chain);
  EXPECT_EQ(m->placements[0].domain.first_block, 11u);
  EXPECT_EQ(m->placements[0].domain.record.root, 12u);
  EXPECT_EQ(m->placements[0].domain.record.model_fp, 13u);
  EXPECT_EQ(m->placements[0].domain.record.salt_fp, 0u);
  EXPECT_TRUE(m->placements[1].chain.empty());
  EXPECT_EQ(m->placements[1].domain.first_block, 0u);
  ASSERT_TRUE(m->has_load);
  ASSERT_EQ(m->load.size(), 1u);
  EXPECT_EQ(m->load[0].backend, "r1");
  EXPECT_EQ(m->load[0].load, load[0].load);
  // Nothing placed since: the next message carries the table alone, with the next sequence.
  const std::vector<std::string> next = outbox.Take({});
  ASSERT_EQ(next.size(), 1u);
  m = DecodeGossip(next[0]);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->sequence, 1u);
  EXPECT_TRUE(m->placements.empty());
  EXPECT_TRUE(m->has_load);
  EXPECT_TRUE(m->load.empty());
}

TEST_F(GossipTest, ManyPlacementsSplitIntoDatagramsWithTheTableInTheLast) {
  GossipOutbox outbox(1, GossipOptions{.max_message_bytes = 2000, .max_chain_blocks = 2048});
  // 100 blocks = 800 bytes each: two fit a datagram; a 1,000-block chain is cut to fit alone.
  for (uint64_t i = 0; i < 5; ++i) outbox.Add("r0", Chain(i, 100));
  outbox.Add("r0", Chain(99, 1000));
  const std::vector<std::string> datagrams =
      outbox.Take(std::vector<PeerBackendLoad>{{.backend = "r0", .load = {.in_flight = 6}}});
  // [p0 p1] [p2 p3] [p4] [the cut chain, too full for the table] [the table].
  ASSERT_EQ(datagrams.size(), 5u);
  std::vector<PeerPlacement> placements;
  for (size_t i = 0; i < datagrams.size(); ++i) {
    EXPECT_LE(datagrams[i].size(), 2000u);
    absl::StatusOr<GossipMessage> m = DecodeGossip(datagrams[i]);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m->sequence, i);
    EXPECT_EQ(m->has_load, i + 1 == datagrams.size());
    for (PeerPlacement& p : m->placements) placements.push_back(std::move(p));
  }
  ASSERT_EQ(placements.size(), 6u);
  for (uint64_t i = 0; i < 5; ++i) EXPECT_EQ(placements[i].chain, Chain(i, 100));
  // The long chain keeps its first blocks, as many as fit.
  const std::vector<uint64_t> full = Chain(99, 1000);
  const std::vector<uint64_t>& cut = placements[5].chain;
  EXPECT_GT(cut.size(), 200u);
  EXPECT_TRUE(std::equal(cut.begin(), cut.end(), full.begin()));
}

TEST_F(GossipTest, AStalledSenderQueuesAtMostMaxPending) {
  GossipOutbox outbox(1, GossipOptions{.max_pending = 3});
  for (uint64_t i = 0; i < 5; ++i) outbox.Add("r0", Chain(i, 2));
  EXPECT_EQ(outbox.pending(), 3u);
  EXPECT_EQ(outbox.dropped(), 2);
  outbox.Take({});
  outbox.Add("r0", Chain(9, 2));
  EXPECT_EQ(outbox.pending(), 1u);
}

// A datagram bound below a header and a name: every placement still goes, alone and without its
// chain, and the take ends.
TEST_F(GossipTest, ABoundTooSmallForAPlacementStillSendsEachAlone) {
  GossipOutbox outbox(1, GossipOptions{.max_message_bytes = 10});
  outbox.Add("r0", Chain(1, 4));
  outbox.Add("r1", Chain(2, 4));
  const std::vector<std::string> datagrams = outbox.Take({});
  ASSERT_EQ(datagrams.size(), 3u);  // one per placement, then the (empty) table
  for (const std::string& d : datagrams) {
    absl::StatusOr<GossipMessage> m = DecodeGossip(d);
    ASSERT_TRUE(m.ok()) << m.status();
    for (const PeerPlacement& p : m->placements) EXPECT_TRUE(p.chain.empty());
  }
}

TEST_F(GossipTest, MalformedDatagramsAreRefusedWithAReason) {
  GossipOutbox outbox(1, GossipOptions{});
  outbox.Add("r0", Chain(1, 4), {.first_block = 5, .record = {.root = 6, .model_fp = 7}});
  const std::string good =
      outbox.Take(std::vector<PeerBackendLoad>{{.backend = "r0", .load = {.in_flight = 1}}})[0];
  ASSERT_TRUE(DecodeGossip(good).ok());
  EXPECT_NE(DecodeGossip("").status().message().find("not a warmroute gossip message"),
            std::string::npos);
  EXPECT_NE(DecodeGossip("GET / HTTP/1.1\r\n\r\n").status().message().find("header"),
            std::string::npos);
  // Cut anywhere, it is refused, never read past its end.
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(DecodeGossip(good.substr(0, n)).ok()) << n;
  }
  EXPECT_NE(DecodeGossip(good + "x").status().message().find("after its end"), std::string::npos);
  // The placement's domain flag (after the 23-byte header, the name and the 4 hashes) is 0 or 1.
  std::string bad_flag = good;
  const size_t flag_at = 23 + 1 + 2 + 2 + 4 * 8;
  ASSERT_EQ(bad_flag[flag_at], 1);
  bad_flag[flag_at] = 2;
  EXPECT_NE(DecodeGossip(bad_flag).status().message().find("domain flag"), std::string::npos);
  // A count far beyond the bytes that follow.
  std::string huge = good.substr(0, 21) + std::string("\xff\xff", 2);
  EXPECT_NE(DecodeGossip(huge).status().message().find("truncated in placement 1 of 65535"),
            std::string::npos);
}

TEST_F(GossipTest, APeersPlacementsWarmTheIndexAndItsOwnAreIgnored) {
  auto sender = MakeRouter(3);
  auto receiver = MakeRouter(3);
  GossipOutbox outbox(/*sender=*/1, GossipOptions{});
  sender->SetPlacementObserver(
      [&](BackendId b, std::span<const uint64_t> chain, const DispatchDomain& domain) {
        outbox.Add(sender->fleet().backend(b).name, chain, domain);
      });
  const RoutingRequest request = Request(1, Chain(5, 40), 640);
  absl::StatusOr<Decision> d = sender->Route(request);
  ASSERT_TRUE(d.ok());
  // Precise mode: the dispatch's domain, which the receiver must record for its KV events.
  const DispatchDomain domain = {.first_block = 0xF1,
                                 .record = {.root = 0xA, .model_fp = 0xB, .salt_fp = 0xC}};
  sender->SetDispatchDomain(request.id, domain);
  EXPECT_EQ(outbox.pending(), 0u);  // at the insert, not the decision
  sender->CommitInsert(request.id);
  EXPECT_EQ(outbox.pending(), 1u);

  GossipReceiver own(/*self=*/1, GossipReceiverOptions{});
  GossipReceiver peer(/*self=*/2, GossipReceiverOptions{});
  const std::vector<std::string> datagrams = outbox.Take(OwnLoad(*sender));
  ASSERT_EQ(datagrams.size(), 1u);
  ASSERT_TRUE(own.OnDatagram(datagrams[0], clock_.Now(), *receiver).ok());
  EXPECT_EQ(receiver->index().Match(request.key.block_hashes)[d->backend], 0);
  EXPECT_EQ(own.counters().messages, 0);
  ASSERT_TRUE(peer.OnDatagram(datagrams[0], clock_.Now(), *receiver).ok());
  EXPECT_EQ(receiver->index().Match(request.key.block_hashes)[d->backend], 40);
  EXPECT_EQ(peer.counters().placements, 1);
  // The peer's domain is recorded where it placed the request: the engine's events for that
  // dispatch (its answer's blocks too) are attributed here as if this gateway had sent it.
  const std::span<const DomainRecord> candidates =
      receiver->attribution().Candidates(d->backend, domain.first_block);
  ASSERT_EQ(candidates.size(), 1u);
  EXPECT_EQ(candidates[0].root, 0xAu);
  EXPECT_EQ(candidates[0].model_fp, 0xBu);
  EXPECT_EQ(candidates[0].salt_fp, 0xCu);
  // The receiver now sends the request's next turn where the sender put the first.
  absl::StatusOr<Decision> next = receiver->Route(Request(2, Chain(5, 41), 656));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->backend, d->backend);
  EXPECT_EQ(next->predicted_cached_tokens, 640);
  // The sender's load reached the receiver's view of that backend.
  const BackendState& seen = receiver->fleet().backend(d->backend);
  EXPECT_EQ(seen.peers.in_flight, 1);
  EXPECT_EQ(seen.peers.outstanding_prefill_tokens, 640);
}

TEST_F(GossipTest, LoadIsSummedOverPeersReplacedByEachTableAndForgottenWhenSilent) {
  auto router = MakeRouter(2);
  GossipReceiver receiver(/*self=*/9,
                          GossipReceiverOptions{.peer_expiry = std::chrono::seconds(2)});
  GossipOutbox a(1, GossipOptions{});
  GossipOutbox b(2, GossipOptions{});
  auto table = [](int64_t r0, int64_t r1) {
    std::vector<PeerBackendLoad> t;
    if (r0 > 0)
      t.push_back(
          {.backend = "r0", .load = {.in_flight = r0, .outstanding_prefill_tokens = 100 * r0}});
    if (r1 > 0) t.push_back({.backend = "r1", .load = {.in_flight = r1}});
    t.push_back({.backend = "gone", .load = {.in_flight = 5}});  // not in this fleet
    return t;
  };
  auto feed = [&](GossipOutbox& from, std::vector<PeerBackendLoad> t) {
    for (const std::string& d : from.Take(t))
      ASSERT_TRUE(receiver.OnDatagram(d, clock_.Now(), *router).ok());
  };
  auto peers = [&](BackendId id) { return router->fleet().backend(id).peers; };
  feed(a, table(2, 1));
  feed(b, table(3, 0));
  EXPECT_EQ(peers(0).in_flight, 5);
  EXPECT_EQ(peers(0).outstanding_prefill_tokens, 500);
  EXPECT_EQ(peers(1).in_flight, 1);
  EXPECT_EQ(receiver.peers(), 2u);
  // A's next table drops r1 (nothing there any more) and lowers r0.
  feed(a, table(1, 0));
  EXPECT_EQ(peers(0).in_flight, 4);
  EXPECT_EQ(peers(1).in_flight, 0);
  // A message lost on the way: counted from the gap in a's sequence numbers.
  a.Take(table(1, 0));
  feed(a, table(1, 0));
  EXPECT_EQ(receiver.counters().lost, 1);
  // B falls silent: after the expiry only a's load counts.
  clock_.Advance(std::chrono::seconds(1));
  feed(a, table(1, 0));
  clock_.Advance(std::chrono::milliseconds(1500));
  receiver.Tick(clock_.Now(), *router);
  EXPECT_EQ(receiver.peers(), 1u);
  EXPECT_EQ(receiver.counters().expired, 1);
  EXPECT_EQ(peers(0).in_flight, 1);
  // A backend added after its load was reported gets the sum at the next table.
  const BackendId later = router->AddBackend({.name = "gone"});
  feed(a, table(1, 0));
  EXPECT_EQ(peers(later).in_flight, 5);
}

// Every replica that hears the same peers numbers them alike (by sender id), and the Router
// is told as peers are first heard and forgotten (GatewayPlace, for the policy's spread).
TEST_F(GossipTest, TheGatewaysPlaceFollowsThePeersItHears) {
  auto router = MakeRouter(2);
  GossipReceiver receiver(/*self=*/5,
                          GossipReceiverOptions{.peer_expiry = std::chrono::seconds(2)});
  GossipOutbox above(9, GossipOptions{});
  GossipOutbox below(3, GossipOptions{});
  auto feed = [&](GossipOutbox& from) {
    for (const std::string& d : from.Take({}))
      ASSERT_TRUE(receiver.OnDatagram(d, clock_.Now(), *router).ok());
  };
  EXPECT_EQ(router->gateway_place(), (GatewayPlace{.rank = 0, .count = 1}));
  feed(above);
  EXPECT_EQ(router->gateway_place(), (GatewayPlace{.rank = 0, .count = 2}));
  feed(below);
  EXPECT_EQ(router->gateway_place(), (GatewayPlace{.rank = 1, .count = 3}));
  EXPECT_EQ(receiver.place(), router->gateway_place());
  // The peer below falls silent: this gateway is first of two again.
  clock_.Advance(std::chrono::seconds(1));
  feed(above);
  clock_.Advance(std::chrono::milliseconds(1500));
  receiver.Tick(clock_.Now(), *router);
  EXPECT_EQ(router->gateway_place(), (GatewayPlace{.rank = 0, .count = 2}));
}

// UDP may deliver a datagram twice or late: an older message's table must not replace the
// newer one already applied (its placements still count), and a peer that starts over under
// the same id (its sequence far behind) is heard again.
TEST_F(GossipTest, AnOlderMessagesTableDoesNotReplaceANewerOne) {
  auto router = MakeRouter(1);
  GossipReceiver receiver(/*self=*/9, GossipReceiverOptions{});
  GossipOutbox a(1, GossipOptions{});
  auto table = [](int64_t in_flight) {
    return std::vector<PeerBackendLoad>{{.backend = "r0", .load = {.in_flight = in_flight}}};
  };
  const std::vector<std::string> older = a.Take(table(7));
  a.Add("r0", Chain(9, 4));
  const std::vector<std::string> newer = a.Take(table(2));
  ASSERT_EQ(older.size(), 1u);
  ASSERT_EQ(newer.size(), 1u);
  ASSERT_TRUE(receiver.OnDatagram(newer[0], clock_.Now(), *router).ok());
  EXPECT_EQ(router->fleet().backend(0).peers.in_flight, 2);
  ASSERT_TRUE(receiver.OnDatagram(older[0], clock_.Now(), *router).ok());
  EXPECT_EQ(router->fleet().backend(0).peers.in_flight, 2);
  // A duplicate of the newest: its table is the one applied already.
  ASSERT_TRUE(receiver.OnDatagram(newer[0], clock_.Now(), *router).ok());
  EXPECT_EQ(router->fleet().backend(0).peers.in_flight, 2);
  EXPECT_EQ(receiver.counters().placements, 2);

  // The peer starts over with the same id: sequence 0 again, far behind; its tables count.
  for (int i = 0; i < 2000; ++i) (void)a.Take(table(2));
  ASSERT_TRUE(receiver.OnDatagram(a.Take(table(3))[0], clock_.Now(), *router).ok());
  EXPECT_EQ(router->fleet().backend(0).peers.in_flight, 3);
  GossipOutbox restarted(1, GossipOptions{});
  ASSERT_TRUE(receiver.OnDatagram(restarted.Take(table(4))[0], clock_.Now(), *router).ok());
  EXPECT_EQ(router->fleet().backend(0).peers.in_flight, 4);
  ASSERT_TRUE(receiver.OnDatagram(restarted.Take(table(5))[0], clock_.Now(), *router).ok());
  EXPECT_EQ(router->fleet().backend(0).peers.in_flight, 5);
}

// What a gateway counts: its own requests and, from the gossip, its peers'. Without the peers'
// load, a gateway that routed nothing to a backend would send a new request there although the
// others have loaded it.
TEST_F(GossipTest, WarmrouteCountsThePeersLoad) {
  const RoutingRequest request = Request(1, Chain(3, 10), 160);
  auto alone = MakeRouter(2);
  absl::StatusOr<Decision> d = alone->Route(request);
  ASSERT_TRUE(d.ok());
  const BackendId first = d->backend;
  auto router = MakeRouter(2);
  router->SetPeerLoad(first, {.in_flight = 8, .outstanding_prefill_tokens = 40000});
  d = router->Route(request);
  ASSERT_TRUE(d.ok());
  EXPECT_NE(d->backend, first);
}

}  // namespace
}  // namespace warmroute::routing
