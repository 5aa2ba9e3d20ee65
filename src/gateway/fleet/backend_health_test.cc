#include "gateway/fleet/backend_health.h"

#include <gtest/gtest.h>

namespace warmroute::gateway {
namespace {

using std::chrono::seconds;

TEST(BackendHealthTest, EjectsAfterConsecutiveFailuresOnly) {
  BackendHealth h({.eject_after_failures = 3, .backoff_initial = seconds(1),
                   .backoff_max = seconds(8)});
  const TimePoint t0{};
  EXPECT_FALSE(h.OnFailure(t0));
  EXPECT_FALSE(h.OnFailure(t0));
  h.OnSuccess();  // breaks the run
  EXPECT_FALSE(h.OnFailure(t0));
  EXPECT_FALSE(h.OnFailure(t0));
  EXPECT_TRUE(h.Available(t0));
  EXPECT_TRUE(h.OnFailure(t0));
  EXPECT_FALSE(h.Available(t0));
  EXPECT_EQ(h.StateName(t0), "ejected");
  EXPECT_TRUE(h.Available(t0 + seconds(1)));
}

TEST(BackendHealthTest, BackOffDoublesOnProbationUpToTheMaxAndSuccessResetsIt) {
  BackendHealth h({.eject_after_failures = 2, .backoff_initial = seconds(1),
                   .backoff_max = seconds(3)});
  TimePoint t{};
  h.OnFailure(t);
  ASSERT_TRUE(h.OnFailure(t));
  EXPECT_EQ(h.ejected_until() - t, seconds(1));
  t += seconds(1);
  ASSERT_TRUE(h.OnFailure(t)) << "one failure on probation ejects again";
  EXPECT_EQ(h.ejected_until() - t, seconds(2));
  t += seconds(2);
  ASSERT_TRUE(h.OnFailure(t));
  EXPECT_EQ(h.ejected_until() - t, seconds(3)) << "capped at backoff_max";
  t += seconds(3);
  h.OnSuccess();
  EXPECT_FALSE(h.OnFailure(t)) << "after a success the full run is needed again";
  ASSERT_TRUE(h.OnFailure(t));
  EXPECT_EQ(h.ejected_until() - t, seconds(1));
  EXPECT_EQ(h.ejections(), 4);
}

TEST(BackendHealthTest, FailedProbeTakesItDownUntilAProbeSucceeds) {
  BackendHealth h(EjectionOptions{});
  h.OnProbe(false);
  EXPECT_FALSE(h.Available(TimePoint{} + seconds(100)));
  EXPECT_EQ(h.StateName(TimePoint{}), "probe_failed");
  h.OnProbe(true);
  EXPECT_TRUE(h.Available(TimePoint{}));
}

TEST(BackendHealthTest, ABackendAwaitingItsFirstProbeIsDownUntilOneSucceeds) {
  BackendHealth h(EjectionOptions{});
  h.AwaitFirstProbe();
  EXPECT_FALSE(h.Available(TimePoint{}));
  EXPECT_EQ(h.StateName(TimePoint{}), "probe_pending");
  h.OnProbe(false);
  EXPECT_FALSE(h.Available(TimePoint{}));
  EXPECT_EQ(h.StateName(TimePoint{}), "probe_pending");
  h.OnProbe(true);
  EXPECT_TRUE(h.Available(TimePoint{}));
  EXPECT_EQ(h.StateName(TimePoint{}), "up");
}

TEST(BackendHealthTest, CountsEachTimeItIsFoundDown) {
  BackendHealth h(
      {.eject_after_failures = 1, .backoff_initial = seconds(1), .backoff_max = seconds(8)});
  h.AwaitFirstProbe();
  h.OnProbe(false);  // not up yet: not a down episode
  h.OnProbe(true);
  EXPECT_EQ(h.down_episodes(), 0);
  h.OnProbe(false);
  h.OnProbe(false);  // still the same episode
  EXPECT_EQ(h.down_episodes(), 1);
  h.OnProbe(true);
  ASSERT_TRUE(h.OnFailure(TimePoint{}));  // an ejection
  EXPECT_EQ(h.down_episodes(), 2);
}

}  // namespace
}  // namespace warmroute::gateway
