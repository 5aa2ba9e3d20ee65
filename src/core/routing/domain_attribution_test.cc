#include "core/routing/domain_attribution.h"

#include "gtest/gtest.h"

namespace warmroute::routing {
namespace {

DomainRecord Root(uint64_t root) { return {.root = root, .model_fp = 1, .salt_fp = 0, .refs = 0}; }

TEST(DomainAttributionTest, KeepsDistinctDomainsPerFirstBlockAndBackend) {
  DomainAttribution a({});
  a.Record(0, 10, Root(1));
  a.Record(0, 10, Root(1));
  a.Record(0, 10, Root(2));
  a.Record(1, 10, Root(3));
  a.Record(0, 0, Root(4));  // no first block: ignored
  ASSERT_EQ(a.Candidates(0, 10).size(), 2u);
  EXPECT_EQ(a.Candidates(0, 10)[0].refs, 2u);
  EXPECT_EQ(a.Candidates(1, 10).size(), 1u);
  EXPECT_TRUE(a.Candidates(0, 11).empty());
  EXPECT_TRUE(a.Candidates(7, 10).empty());
  a.Forget(0);
  EXPECT_TRUE(a.Candidates(0, 10).empty());
  EXPECT_EQ(a.Candidates(1, 10).size(), 1u);
}

TEST(DomainAttributionTest, ForgetsTheOldestRecordsBeyondTheWindow) {
  DomainAttribution a({.records_per_backend = 3});
  a.Record(0, 10, Root(1));
  a.Record(0, 20, Root(2));
  a.Record(0, 10, Root(1));
  a.Record(0, 30, Root(3));  // the first (10, 1) leaves; the second keeps it
  EXPECT_EQ(a.Candidates(0, 10).size(), 1u);
  a.Record(0, 40, Root(4));  // (20, 2) leaves
  EXPECT_TRUE(a.Candidates(0, 20).empty());
  a.Record(0, 50, Root(5));  // the second (10, 1) leaves
  EXPECT_TRUE(a.Candidates(0, 10).empty());
  EXPECT_EQ(a.records(0), 3u);
  EXPECT_GT(a.MemoryBytes(), 0u);
}

TEST(DomainAttributionTest, FleetCandidatesAreEveryBackendsRecordsByContent) {
  DomainAttribution a({.records_per_backend = 2});
  a.Record(0, 10, Root(1));
  a.Record(1, 10, Root(1));
  a.Record(1, 10, Root(2));
  ASSERT_EQ(a.FleetCandidates(10).size(), 2u);
  EXPECT_EQ(a.FleetCandidates(10)[0].refs, 2u);  // root 1, from both backends
  EXPECT_TRUE(a.FleetCandidates(20).empty());
  a.Forget(0);
  ASSERT_EQ(a.FleetCandidates(10).size(), 2u);
  EXPECT_EQ(a.FleetCandidates(10)[0].refs, 1u);
  a.Record(1, 20, Root(3));  // backend 1's window of 2: (10, 1) leaves
  ASSERT_EQ(a.FleetCandidates(10).size(), 1u);
  EXPECT_EQ(a.FleetCandidates(10)[0].root, 2u);
  a.Forget(1);
  EXPECT_TRUE(a.FleetCandidates(10).empty());
  EXPECT_TRUE(a.FleetCandidates(20).empty());
}

TEST(DomainAttributionTest, UnsaltedDomainsAreTheUnsaltedRecordsOfEveryBackend) {
  DomainAttribution a({.records_per_backend = 2});
  a.Record(0, 10, Root(1));
  a.Record(1, 20, Root(1));
  a.Record(1, 30, {.root = 2, .model_fp = 1, .salt_fp = 7, .refs = 0});  // salted: not listed
  ASSERT_EQ(a.UnsaltedDomains().size(), 1u);
  EXPECT_EQ(a.UnsaltedDomains()[0].root, 1u);
  EXPECT_EQ(a.UnsaltedDomains()[0].refs, 2u);
  a.Forget(0);
  ASSERT_EQ(a.UnsaltedDomains().size(), 1u);
  a.Record(1, 40, Root(3));  // backend 1's window: (20, 1) leaves
  ASSERT_EQ(a.UnsaltedDomains().size(), 1u);
  EXPECT_EQ(a.UnsaltedDomains()[0].root, 3u);
}

TEST(DomainAttributionTest, TheEmptySaltHasNoFingerprint) {
  EXPECT_EQ(SaltFingerprint(""), 0u);
  EXPECT_NE(SaltFingerprint("a"), 0u);
  EXPECT_NE(SaltFingerprint("a"), SaltFingerprint("b"));
  EXPECT_NE(ModelFingerprint("m"), ModelFingerprint("n"));
}

}  // namespace
}  // namespace warmroute::routing
