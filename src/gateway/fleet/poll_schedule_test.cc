#include "gateway/fleet/poll_schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace warmroute::gateway {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A backend configured with its models (never discovered) whose engine exposes load metrics.
PolledBackend WithModels(std::string_view address, routing::BackendId id = 0,
                         const void* tls = nullptr) {
  return {.address = address,
          .id = id,
          .models_configured = true,
          .exposes_load_metrics = true,
          .tls_identity = tls};
}

// A backend whose models are discovered.
PolledBackend WithoutModels(std::string_view address, routing::BackendId id = 0) {
  PolledBackend backend = WithModels(address, id);
  backend.models_configured = false;
  return backend;
}

const char* NameOf(PollKind kind) {
  switch (kind) {
    case PollKind::kProbe:
      return "probe";
    case PollKind::kScrape:
      return "scrape";
    case PollKind::kDiscovery:
      return "discovery";
  }
  return "?";
}

class PollScheduleTest : public testing::Test {
 protected:
  // The polls that a tick at the clock's time starts, as "probe a:1", in the plan's order.
  std::vector<std::string> Tick(const std::vector<PolledBackend>& backends) {
    plan_ = schedule_.Tick(clock_.Now(), backends, options_);
    std::vector<std::string> started;
    for (const PollStart& start : plan_.start) {
      started.push_back(std::string(NameOf(start.kind)) + " " +
                        std::string(backends[start.backend].address));
    }
    return started;
  }

  // Over five probe intervals, each tick that starts anything starts only a probe of `backend`
  // (which succeeds).
  void ExpectOnlyProbes(const PolledBackend& backend) {
    const std::string probe = "probe " + std::string(backend.address);
    for (int i = 0; i < 5; ++i) {
      EXPECT_THAT(Tick({backend}), ElementsAre(probe));
      schedule_.OnProbeDone(backend.address, true);
      EXPECT_THAT(Tick({backend}), IsEmpty());
      clock_.Advance(options_.probe_interval);
    }
  }

  ManualClock clock_;
  PollerOptions options_{.probe_interval = milliseconds(1000),
                         .probe_timeout = milliseconds(1000),
                         .scrape_interval = milliseconds(200),
                         .scrape_timeout = milliseconds(1000)};
  PollSchedule schedule_;
  PollPlan plan_;  // the last tick's
};

TEST_F(PollScheduleTest, ANewBackendGetsStateAndIsProbedAndScrapedAtOnce) {
  EXPECT_THAT(Tick({WithModels("a:1")}), ElementsAre("probe a:1", "scrape a:1"));
  EXPECT_THAT(plan_.fresh, ElementsAre(0u));
  EXPECT_THAT(plan_.forget, IsEmpty());
  EXPECT_TRUE(schedule_.Tracks("a:1"));
  EXPECT_EQ(schedule_.tracked(), 1u);
}

TEST_F(PollScheduleTest, AProbeIsNotStartedWhileOneIsRunning) {
  options_.scrape_interval = milliseconds(0);
  EXPECT_THAT(Tick({WithModels("a:1")}), ElementsAre("probe a:1"));
  clock_.Advance(milliseconds(5000));
  EXPECT_THAT(Tick({WithModels("a:1")}), IsEmpty());
  EXPECT_THAT(plan_.fresh, IsEmpty());
  schedule_.OnProbeDone("a:1", true);
  // Overdue: it starts at the next tick.
  EXPECT_THAT(Tick({WithModels("a:1")}), ElementsAre("probe a:1"));
}

TEST_F(PollScheduleTest, ProbesStartEveryProbeInterval) {
  options_.scrape_interval = milliseconds(0);
  EXPECT_THAT(Tick({WithModels("a:1")}), ElementsAre("probe a:1"));
  clock_.Advance(milliseconds(30));
  schedule_.OnProbeDone("a:1", true);
  clock_.Advance(milliseconds(969));
  EXPECT_THAT(Tick({WithModels("a:1")}), IsEmpty());
  clock_.Advance(milliseconds(1));
  EXPECT_THAT(Tick({WithModels("a:1")}), ElementsAre("probe a:1"));
  schedule_.OnProbeDone("a:1", false);
  clock_.Advance(milliseconds(999));
  EXPECT_THAT(Tick({WithModels("a:1")}), IsEmpty());
  clock_.Advance(milliseconds(1));
  EXPECT_THAT(Tick({WithModels("a:1")}), ElementsAre("probe a:1"));
}

TEST_F(PollScheduleTest, ScrapesStartEveryScrapeIntervalWithAtMostOneRunning) {
  EXPECT_THAT(Tick({WithModels("a:1")}), ElementsAre("probe a:1", "scrape a:1"));
  schedule_.OnProbeDone("a:1", true);
  clock_.Advance(milliseconds(199));
  EXPECT_THAT(Tick({WithModels("a:1")}), IsEmpty());
  clock_.Advance(milliseconds(1));
  EXPECT_THAT(Tick({WithModels("a:1")}), IsEmpty());  // the first is still running
  schedule_.OnScrapeDone("a:1", true);
  EXPECT_THAT(Tick({WithModels("a:1")}), ElementsAre("scrape a:1"));
  schedule_.OnScrapeDone("a:1", true);
  clock_.Advance(milliseconds(199));
  EXPECT_THAT(Tick({WithModels("a:1")}), IsEmpty());
  clock_.Advance(milliseconds(1));
  EXPECT_THAT(Tick({WithModels("a:1")}), ElementsAre("scrape a:1"));
}

TEST_F(PollScheduleTest, NothingIsScrapedWhenTheScrapeIntervalIsZero) {
  options_.scrape_interval = milliseconds(0);
  ExpectOnlyProbes(WithModels("a:1"));
}

TEST_F(PollScheduleTest, AnEngineWithoutLoadMetricsIsNotScraped) {
  PolledBackend backend = WithModels("a:1");
  backend.exposes_load_metrics = false;
  ExpectOnlyProbes(backend);
}

TEST_F(PollScheduleTest, EachBackendWaitsOnlyForItsOwnPolls) {
  options_.scrape_interval = milliseconds(0);
  EXPECT_THAT(Tick({WithModels("a:1"), WithModels("b:1")}), ElementsAre("probe a:1", "probe b:1"));
  EXPECT_THAT(plan_.fresh, ElementsAre(0u, 1u));
  schedule_.OnProbeDone("b:1", true);  // a:1 does not answer
  clock_.Advance(options_.probe_interval);
  EXPECT_THAT(Tick({WithModels("a:1"), WithModels("b:1")}), ElementsAre("probe b:1"));
}

TEST_F(PollScheduleTest, ModelsAreDiscoveredOnlyOnceTheProbeSucceeds) {
  options_.scrape_interval = milliseconds(0);
  EXPECT_THAT(Tick({WithoutModels("a:1")}), ElementsAre("probe a:1"));
  clock_.Advance(milliseconds(10));
  EXPECT_THAT(Tick({WithoutModels("a:1")}), IsEmpty());  // probing: not known to be up
  schedule_.OnProbeDone("a:1", false);
  EXPECT_THAT(Tick({WithoutModels("a:1")}), IsEmpty());
  clock_.Advance(options_.probe_interval);
  EXPECT_THAT(Tick({WithoutModels("a:1")}), ElementsAre("probe a:1"));
  schedule_.OnProbeDone("a:1", true);
  EXPECT_THAT(Tick({WithoutModels("a:1")}), ElementsAre("discovery a:1"));
}

TEST_F(PollScheduleTest, ABackendWithConfiguredModelsIsNeverAskedForThem) {
  options_.scrape_interval = milliseconds(0);
  ExpectOnlyProbes(WithModels("a:1"));
}

TEST_F(PollScheduleTest, AModelListEndsDiscoveryWhileTheProbesSucceed) {
  options_.scrape_interval = milliseconds(0);
  Tick({WithoutModels("a:1", 7)});
  schedule_.OnProbeDone("a:1", true);
  EXPECT_THAT(Tick({WithoutModels("a:1", 7)}), ElementsAre("discovery a:1"));
  EXPECT_EQ(schedule_.OnDiscoveryDone("a:1", DiscoveryResult::kModelList), PollChange::kNone);
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(options_.probe_interval);
    EXPECT_THAT(Tick({WithoutModels("a:1", 7)}), ElementsAre("probe a:1"));
    schedule_.OnProbeDone("a:1", true);
    EXPECT_THAT(Tick({WithoutModels("a:1", 7)}), IsEmpty());
  }
}

TEST_F(PollScheduleTest, ADiscoveryIsNotStartedWhileOneIsRunning) {
  options_.scrape_interval = milliseconds(0);
  Tick({WithoutModels("a:1")});
  schedule_.OnProbeDone("a:1", true);
  EXPECT_THAT(Tick({WithoutModels("a:1")}), ElementsAre("discovery a:1"));
  clock_.Advance(options_.probe_interval * 3);
  EXPECT_THAT(Tick({WithoutModels("a:1")}), ElementsAre("probe a:1"));
  schedule_.OnProbeDone("a:1", true);
  EXPECT_THAT(Tick({WithoutModels("a:1")}), IsEmpty());
  schedule_.OnDiscoveryDone("a:1", DiscoveryResult::kNoAnswer);
  EXPECT_THAT(Tick({WithoutModels("a:1")}), ElementsAre("discovery a:1"));
}

TEST_F(PollScheduleTest, AnUnansweredDiscoveryIsRetriedAfterTheProbeInterval) {
  options_.scrape_interval = milliseconds(0);
  Tick({WithoutModels("a:1")});
  schedule_.OnProbeDone("a:1", true);
  EXPECT_THAT(Tick({WithoutModels("a:1")}), ElementsAre("discovery a:1"));
  EXPECT_EQ(schedule_.OnDiscoveryDone("a:1", DiscoveryResult::kNoAnswer), PollChange::kNone);
  clock_.Advance(options_.probe_interval - milliseconds(1));
  EXPECT_THAT(Tick({WithoutModels("a:1")}), IsEmpty());
  clock_.Advance(milliseconds(1));
  EXPECT_THAT(Tick({WithoutModels("a:1")}), ElementsAre("probe a:1", "discovery a:1"));
}

TEST_F(PollScheduleTest, AnUnusableModelListIsAskedForEveryProbeIntervalAndWarnedOnce) {
  options_.scrape_interval = milliseconds(0);
  Tick({WithoutModels("a:1")});
  schedule_.OnProbeDone("a:1", true);
  EXPECT_THAT(Tick({WithoutModels("a:1")}), ElementsAre("discovery a:1"));
  EXPECT_EQ(schedule_.OnDiscoveryDone("a:1", DiscoveryResult::kNoModelList),
            PollChange::kNowFailed);
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(options_.probe_interval);
    EXPECT_THAT(Tick({WithoutModels("a:1")}), ElementsAre("probe a:1", "discovery a:1"));
    schedule_.OnProbeDone("a:1", true);
    EXPECT_EQ(schedule_.OnDiscoveryDone("a:1", DiscoveryResult::kNoModelList), PollChange::kNone);
  }
  clock_.Advance(options_.probe_interval);
  EXPECT_THAT(Tick({WithoutModels("a:1")}), ElementsAre("probe a:1", "discovery a:1"));
  schedule_.OnProbeDone("a:1", true);
  EXPECT_EQ(schedule_.OnDiscoveryDone("a:1", DiscoveryResult::kModelList), PollChange::kNowOk);
  clock_.Advance(options_.probe_interval);
  EXPECT_THAT(Tick({WithoutModels("a:1")}), ElementsAre("probe a:1"));
}

TEST_F(PollScheduleTest, AProbeThatSucceedsAfterFailingRediscoversTheModels) {
  options_.scrape_interval = milliseconds(0);
  Tick({WithoutModels("a:1")});
  schedule_.OnProbeDone("a:1", true);
  Tick({WithoutModels("a:1")});
  schedule_.OnDiscoveryDone("a:1", DiscoveryResult::kModelList);
  clock_.Advance(options_.probe_interval);
  EXPECT_THAT(Tick({WithoutModels("a:1")}), ElementsAre("probe a:1"));
  schedule_.OnProbeDone("a:1", false);
  EXPECT_THAT(Tick({WithoutModels("a:1")}), IsEmpty());
  clock_.Advance(options_.probe_interval);
  EXPECT_THAT(Tick({WithoutModels("a:1")}), ElementsAre("probe a:1"));
  schedule_.OnProbeDone("a:1", true);
  EXPECT_THAT(Tick({WithoutModels("a:1")}), ElementsAre("discovery a:1"));
}

TEST_F(PollScheduleTest, ABackendReplacedAtTheSameAddressIsAskedForItsModels) {
  options_.scrape_interval = milliseconds(0);
  Tick({WithoutModels("a:1", 1)});
  schedule_.OnProbeDone("a:1", true);
  Tick({WithoutModels("a:1", 1)});
  schedule_.OnDiscoveryDone("a:1", DiscoveryResult::kModelList);
  clock_.Advance(milliseconds(10));
  // Same TLS settings: the state is kept, and the models are asked for again when a discovery is
  // next due.
  EXPECT_THAT(Tick({WithoutModels("a:1", 2)}), IsEmpty());
  EXPECT_THAT(plan_.fresh, IsEmpty());
  clock_.Advance(options_.probe_interval);
  EXPECT_THAT(Tick({WithoutModels("a:1", 2)}), ElementsAre("probe a:1", "discovery a:1"));
  schedule_.OnProbeDone("a:1", true);
  schedule_.OnDiscoveryDone("a:1", DiscoveryResult::kModelList);
  clock_.Advance(options_.probe_interval);
  EXPECT_THAT(Tick({WithoutModels("a:1", 2)}), ElementsAre("probe a:1"));
}

TEST_F(PollScheduleTest, AReplacementDuringADiscoveryIsAskedAgainWhenItEnds) {
  options_.scrape_interval = milliseconds(0);
  Tick({WithoutModels("a:1", 1)});
  schedule_.OnProbeDone("a:1", true);
  EXPECT_THAT(Tick({WithoutModels("a:1", 1)}), ElementsAre("discovery a:1"));
  EXPECT_THAT(Tick({WithoutModels("a:1", 2)}), IsEmpty());
  // The answer is backend 1's.
  schedule_.OnDiscoveryDone("a:1", DiscoveryResult::kModelList);
  clock_.Advance(options_.probe_interval);
  EXPECT_THAT(Tick({WithoutModels("a:1", 2)}), ElementsAre("probe a:1", "discovery a:1"));
}

TEST_F(PollScheduleTest, OtherTlsSettingsAtTheSameAddressGetFreshStateOnceIdle) {
  const int old_tls = 0;
  const int new_tls = 0;
  EXPECT_THAT(Tick({WithModels("a:1", 1, &old_tls)}), ElementsAre("probe a:1", "scrape a:1"));
  schedule_.OnScrapeDone("a:1", true);
  clock_.Advance(milliseconds(10));
  // The old probe still runs: nothing starts for the address.
  EXPECT_THAT(Tick({WithModels("a:1", 2, &new_tls)}), IsEmpty());
  EXPECT_THAT(plan_.fresh, IsEmpty());
  EXPECT_EQ(schedule_.OnProbeDone("a:1", false), PollChange::kNowFailed);
  EXPECT_THAT(Tick({WithModels("a:1", 2, &new_tls)}), ElementsAre("probe a:1", "scrape a:1"));
  EXPECT_THAT(plan_.fresh, ElementsAre(0u));
  EXPECT_THAT(plan_.forget, IsEmpty());
  // Fresh state: the first probe's outcome is a change again.
  EXPECT_EQ(schedule_.OnProbeDone("a:1", false), PollChange::kNowFailed);
  clock_.Advance(milliseconds(10));
  EXPECT_THAT(Tick({WithModels("a:1", 2, &new_tls)}), IsEmpty());
  EXPECT_THAT(plan_.fresh, IsEmpty());
}

TEST_F(PollScheduleTest, ARemovedBackendIsForgottenOnlyOnceNothingOfItRuns) {
  const std::vector<PolledBackend> fleet = {WithoutModels("a:1"), WithModels("b:1"),
                                            WithModels("c:1")};
  Tick(fleet);
  schedule_.OnProbeDone("a:1", true);
  schedule_.OnScrapeDone("a:1", true);
  schedule_.OnProbeDone("b:1", true);
  schedule_.OnScrapeDone("c:1", true);
  // a:1 is discovering, b:1 scraping, c:1 probing.
  EXPECT_THAT(Tick(fleet), ElementsAre("discovery a:1"));
  EXPECT_THAT(Tick({}), IsEmpty());
  ASSERT_THAT(plan_.forget, IsEmpty());
  ASSERT_EQ(schedule_.tracked(), 3u);
  schedule_.OnDiscoveryDone("a:1", DiscoveryResult::kModelList);
  Tick({});
  EXPECT_THAT(plan_.forget, ElementsAre("a:1"));
  schedule_.OnScrapeDone("b:1", true);
  Tick({});
  EXPECT_THAT(plan_.forget, ElementsAre("b:1"));
  schedule_.OnProbeDone("c:1", true);
  Tick({});
  EXPECT_THAT(plan_.forget, ElementsAre("c:1"));
  EXPECT_EQ(schedule_.tracked(), 0u);
  EXPECT_FALSE(schedule_.Tracks("a:1"));
}

TEST_F(PollScheduleTest, ABackendBackBeforeItIsForgottenKeepsItsState) {
  options_.scrape_interval = milliseconds(0);
  EXPECT_THAT(Tick({WithModels("a:1")}), ElementsAre("probe a:1"));
  Tick({});
  ASSERT_TRUE(schedule_.Tracks("a:1"));
  EXPECT_THAT(Tick({WithModels("a:1")}), IsEmpty());
  EXPECT_THAT(plan_.fresh, IsEmpty());
  EXPECT_EQ(schedule_.OnProbeDone("a:1", true), PollChange::kNowOk);
}

TEST_F(PollScheduleTest, AForgottenBackendThatComesBackStartsAfresh) {
  options_.scrape_interval = milliseconds(0);
  Tick({WithModels("a:1")});
  schedule_.OnProbeDone("a:1", true);
  Tick({});
  EXPECT_THAT(plan_.forget, ElementsAre("a:1"));
  EXPECT_THAT(Tick({WithModels("a:1")}), ElementsAre("probe a:1"));
  EXPECT_THAT(plan_.fresh, ElementsAre(0u));
  EXPECT_EQ(schedule_.OnProbeDone("a:1", true), PollChange::kNowOk);
}

TEST_F(PollScheduleTest, ProbeOutcomesAreReportedOncePerChange) {
  options_.scrape_interval = milliseconds(0);
  const bool outcomes[] = {true, true, false, false, true};
  const PollChange expected[] = {PollChange::kNowOk, PollChange::kNone, PollChange::kNowFailed,
                                 PollChange::kNone, PollChange::kNowOk};
  for (int i = 0; i < 5; ++i) {
    EXPECT_THAT(Tick({WithModels("a:1")}), ElementsAre("probe a:1"));
    EXPECT_EQ(schedule_.OnProbeDone("a:1", outcomes[i]), expected[i]) << i;
    clock_.Advance(options_.probe_interval);
  }
}

TEST_F(PollScheduleTest, AFirstFailedProbeIsAChange) {
  Tick({WithModels("a:1")});
  EXPECT_EQ(schedule_.OnProbeDone("a:1", false), PollChange::kNowFailed);
}

TEST_F(PollScheduleTest, ScrapeOutcomesAreReportedOncePerChange) {
  options_.probe_interval = std::chrono::hours(1);
  Tick({WithModels("a:1")});
  schedule_.OnProbeDone("a:1", true);
  // A backend starts as scraped ok: a first success is no change.
  const bool outcomes[] = {true, false, false, true, true};
  const PollChange expected[] = {PollChange::kNone, PollChange::kNowFailed, PollChange::kNone,
                                 PollChange::kNowOk, PollChange::kNone};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(schedule_.OnScrapeDone("a:1", outcomes[i]), expected[i]) << i;
    clock_.Advance(options_.scrape_interval);
    EXPECT_THAT(Tick({WithModels("a:1")}), ElementsAre("scrape a:1"));
  }
}

TEST_F(PollScheduleTest, ChangedIntervalsApplyFromTheNextPoll) {
  EXPECT_THAT(Tick({WithModels("a:1")}), ElementsAre("probe a:1", "scrape a:1"));
  schedule_.OnProbeDone("a:1", true);
  schedule_.OnScrapeDone("a:1", true);
  options_.probe_interval = milliseconds(100);
  options_.scrape_interval = milliseconds(0);
  clock_.Advance(milliseconds(1000));
  EXPECT_THAT(Tick({WithModels("a:1")}), ElementsAre("probe a:1"));
  schedule_.OnProbeDone("a:1", true);
  clock_.Advance(milliseconds(100));
  EXPECT_THAT(Tick({WithModels("a:1")}), ElementsAre("probe a:1"));
}

}  // namespace
}  // namespace warmroute::gateway
