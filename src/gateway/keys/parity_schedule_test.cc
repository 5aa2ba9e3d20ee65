#include "gateway/keys/parity_schedule.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::gateway {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using std::chrono::milliseconds;

constexpr milliseconds kInterval{600'000};
const int kA = 0;  // identities
const int kB = 0;

class ParityScheduleTest : public ::testing::Test {
 protected:
  std::vector<size_t> Tick(const std::vector<ParityPair>& pairs) {
    return schedule_.Tick(now_, pairs);
  }
  ParityChange Done(std::string_view backend, std::string_view model, ParityVerdict verdict,
                    milliseconds interval = kInterval) {
    return schedule_.OnDone(backend, model, verdict, now_, interval);
  }

  ParitySchedule schedule_;
  TimePoint now_{std::chrono::seconds(1000)};
};

TEST_F(ParityScheduleTest, ChecksANewPairAtOnceThenEveryInterval) {
  const std::vector<ParityPair> pairs = {{"r0", "m", &kA}, {"r1", "m", &kA}};
  EXPECT_THAT(Tick(pairs), ElementsAre(0, 1));
  EXPECT_THAT(Tick(pairs), IsEmpty());  // outstanding
  EXPECT_EQ(Done("r0", "m", ParityVerdict::kMatch), ParityChange::kNone);
  EXPECT_EQ(Done("r1", "m", ParityVerdict::kMatch), ParityChange::kNone);
  now_ += kInterval - milliseconds(1);
  EXPECT_THAT(Tick(pairs), IsEmpty());
  now_ += milliseconds(1);
  EXPECT_THAT(Tick(pairs), ElementsAre(0, 1));
}

TEST_F(ParityScheduleTest, IntervalZeroChecksOnlyWhenAPairAppears) {
  std::vector<ParityPair> pairs = {{"r0", "m", &kA}};
  EXPECT_THAT(Tick(pairs), ElementsAre(0));
  Done("r0", "m", ParityVerdict::kMatch, milliseconds(0));
  now_ += std::chrono::hours(24);
  EXPECT_THAT(Tick(pairs), IsEmpty());
  // The backend goes down (absent from a tick) and comes back: checked again.
  EXPECT_THAT(Tick({}), IsEmpty());
  EXPECT_EQ(schedule_.tracked(), 0u);
  EXPECT_THAT(Tick(pairs), ElementsAre(0));
}

TEST_F(ParityScheduleTest, AMismatchSwitchesTheModelOffUntilThePairMatches) {
  const std::vector<ParityPair> pairs = {{"r0", "m", &kA}, {"r1", "m", &kA}, {"r0", "n", &kB}};
  Tick(pairs);
  EXPECT_EQ(Done("r0", "m", ParityVerdict::kMismatch), ParityChange::kMismatch);
  EXPECT_EQ(Done("r1", "m", ParityVerdict::kMatch), ParityChange::kNone);
  EXPECT_EQ(Done("r0", "n", ParityVerdict::kMatch), ParityChange::kNone);
  EXPECT_FALSE(schedule_.ModelOk("m"));
  EXPECT_TRUE(schedule_.ModelOk("n"));
  // Logged once per pair: a second mismatch says nothing new.
  now_ += kInterval;
  EXPECT_THAT(Tick(pairs), ElementsAre(0, 1, 2));
  EXPECT_EQ(Done("r0", "m", ParityVerdict::kMismatch), ParityChange::kNone);
  Done("r1", "m", ParityVerdict::kMatch);
  Done("r0", "n", ParityVerdict::kMatch);
  // A failed check keeps the mismatch (and is not logged as a new failure of a working pair).
  now_ += kInterval;
  Tick(pairs);
  EXPECT_EQ(Done("r0", "m", ParityVerdict::kFailed), ParityChange::kFailed);
  EXPECT_FALSE(schedule_.ModelOk("m"));
  Done("r1", "m", ParityVerdict::kMatch);
  Done("r0", "n", ParityVerdict::kMatch);
  // Retried after kParityRetry, and matching now.
  now_ += kParityRetry;
  EXPECT_THAT(Tick(pairs), ElementsAre(0));
  EXPECT_EQ(Done("r0", "m", ParityVerdict::kMatch), ParityChange::kMatchAgain);
  EXPECT_TRUE(schedule_.ModelOk("m"));
}

TEST_F(ParityScheduleTest, ABackendWithoutTokenizeIsNotedOnceAndIsNoMismatch) {
  const std::vector<ParityPair> pairs = {{"r0", "m", &kA}};
  Tick(pairs);
  EXPECT_EQ(Done("r0", "m", ParityVerdict::kNoEndpoint), ParityChange::kNoEndpoint);
  EXPECT_TRUE(schedule_.ModelOk("m"));
  now_ += kInterval;
  Tick(pairs);
  EXPECT_EQ(Done("r0", "m", ParityVerdict::kNoEndpoint), ParityChange::kNone);
}

TEST_F(ParityScheduleTest, FailuresAreLoggedOncePerRunAndRetriedSooner) {
  const std::vector<ParityPair> pairs = {{"r0", "m", &kA}};
  Tick(pairs);
  EXPECT_EQ(Done("r0", "m", ParityVerdict::kFailed), ParityChange::kFailed);
  EXPECT_TRUE(schedule_.ModelOk("m"));
  now_ += kParityRetry;
  EXPECT_THAT(Tick(pairs), ElementsAre(0));
  EXPECT_EQ(Done("r0", "m", ParityVerdict::kFailed), ParityChange::kNone);
  now_ += kParityRetry;
  Tick(pairs);
  EXPECT_EQ(Done("r0", "m", ParityVerdict::kMatch), ParityChange::kNone);
  now_ += kParityRetry;
  EXPECT_THAT(Tick(pairs), IsEmpty());  // next at the interval
}

TEST_F(ParityScheduleTest, AnotherConfigurationOfTheModelStartsAfresh) {
  const int reloaded = 0;
  Tick({{"r0", "m", &kA}});
  Done("r0", "m", ParityVerdict::kMismatch);
  EXPECT_FALSE(schedule_.ModelOk("m"));
  // A reload gave the model other files: its pairs are checked again at once, state forgotten.
  EXPECT_THAT(Tick({{"r0", "m", &reloaded}}), ElementsAre(0));
  EXPECT_TRUE(schedule_.ModelOk("m"));
  EXPECT_EQ(Done("r0", "m", ParityVerdict::kMatch), ParityChange::kNone);
}

TEST_F(ParityScheduleTest, AGonePairIsForgottenOnceItsCheckIsDone) {
  Tick({{"r0", "m", &kA}});
  EXPECT_THAT(Tick({}), IsEmpty());
  EXPECT_EQ(schedule_.tracked(), 1u);  // its check still runs
  Done("r0", "m", ParityVerdict::kMismatch);
  Tick({});
  EXPECT_EQ(schedule_.tracked(), 0u);
  EXPECT_TRUE(schedule_.ModelOk("m"));
}

}  // namespace
}  // namespace warmroute::gateway
