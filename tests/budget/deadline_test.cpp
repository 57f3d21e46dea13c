#include <gtest/gtest.h>

#include <csignal>
#include <ctime>

#include "budget/fault_env.h"
#include "frugal/budget/budget.h"

namespace frugal {
namespace {

using testing::FaultEnv;

TEST(Deadline, DurationCountsFromNow) {
  FaultEnv env;
  auto d = Deadline::parse("30m", env);
  EXPECT_DOUBLE_EQ(d.remaining_seconds(), 1800);
  env.advance(1800);
  EXPECT_TRUE(d.expired());
}

TEST(Deadline, ClockTimeMeansItsNextOccurrence) {
  FaultEnv env;
  std::tm t{};
  t.tm_year = 126, t.tm_mon = 10, t.tm_mday = 30, t.tm_hour = 17, t.tm_min = 30, t.tm_isdst = -1;
  env.wall = std::chrono::system_clock::from_time_t(std::mktime(&t));
  EXPECT_DOUBLE_EQ(Deadline::parse("18:00", env).remaining_seconds(), 1800);
  EXPECT_DOUBLE_EQ(Deadline::parse("17:00", env).remaining_seconds(), 23.5 * 3600);
}

TEST(Deadline, RejectsOtherText) {
  FaultEnv env;
  for (const char* bad : {"25:00", "soon", "12:3"}) {
    try {
      Deadline::parse(bad, env);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage);
    }
  }
}

TEST(Deadline, StopsBeforeAStepThatWouldNotLeaveTimeToSave) {
  FaultEnv env;
  auto d = Deadline::parse("100s", env);
  EXPECT_FALSE(d.should_stop_before_next_step());
  d.record_step(10);
  d.record_save(5);
  d.record_eval(20);
  env.advance(70);  // 30 s left: step 10 + save 5 + margin 2.5 fits, with eval 35+4.5 does not
  EXPECT_FALSE(d.should_stop_before_next_step(false));
  EXPECT_TRUE(d.should_stop_before_next_step(true));
  env.advance(15);  // 15 s left
  EXPECT_TRUE(d.should_stop_before_next_step(false));
}

TEST(Deadline, TooShortForOneStepIsABudgetError) {
  FaultEnv env;
  auto d = Deadline::parse("10s", env);
  d.record_step(12);
  try {
    d.check_fits_one_step();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::budget);
  }
  auto ok = Deadline::parse("1h", env);
  ok.record_step(12);
  ok.check_fits_one_step();
}

TEST(SignalGuard, FirstSignalSetsTheStopFlag) {
  SignalGuard guard;
  EXPECT_FALSE(guard.stop_requested());
  std::raise(SIGUSR1);
  EXPECT_TRUE(guard.stop_requested());
  EXPECT_EQ(guard.signal_number(), SIGUSR1);
}

TEST(SignalGuardDeathTest, SecondSignalExitsAtOnceWith75WhenACheckpointExists) {
  EXPECT_EXIT(
      {
        SignalGuard guard;
        SignalGuard::set_resumable(true);
        std::raise(SIGTERM);
        std::raise(SIGINT);
        std::_Exit(0);  // not reached
      },
      ::testing::ExitedWithCode(75), "second signal");
}

// Exit 75 says "run again to continue": with nothing saved a rerun starts over, so it is 1.
TEST(SignalGuardDeathTest, SecondSignalWithoutACheckpointExits1SayingNothingWasSaved) {
  EXPECT_EXIT(
      {
        SignalGuard guard;
        SignalGuard::set_resumable(false);
        std::raise(SIGTERM);
        std::raise(SIGINT);
        std::_Exit(0);  // not reached
      },
      ::testing::ExitedWithCode(1), "no checkpoint was saved");
}

TEST(DeadlineSpec, KeepsTheTextAndParsesBeforeAnyClockIsRead) {
  auto d = DeadlineSpec::parse("7h30m");
  EXPECT_EQ(d.text, "7h30m");
  ASSERT_TRUE(d.after);
  EXPECT_EQ(d.after->count(), 27000);
  auto c = DeadlineSpec::parse("17:45");
  EXPECT_FALSE(c.after);
  EXPECT_EQ(c.hour, 17);
  EXPECT_EQ(c.minute, 45);
  FaultEnv env;
  env.advance(100);
  EXPECT_DOUBLE_EQ(Deadline::start(d, env).remaining_seconds(), 27000);  // counted from start()
}

TEST(Deadline, TimeLeftRefusesADeadlineNoLongerThanTheMarginOrPassed) {
  FaultEnv env;
  for (const char* text : {"1s", "0s"}) {
    auto d = Deadline::parse(text, env);
    try {
      d.check_time_left();
      ADD_FAILURE() << text << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::budget);
      EXPECT_NE(std::string(e.what()).find("nothing was changed"), std::string::npos) << e.what();
    }
  }
  auto ok = Deadline::parse("10s", env);
  EXPECT_NO_THROW(ok.check_time_left());
  env.advance(10);  // passed while the run was getting ready
  EXPECT_THROW(ok.check_time_left(), Error);
}

// torchrun's SIGTERM to a rank still closing a session that has ended: the rank exits with its
// own code (here 75), not killed by the signal.
TEST(SignalGuardDeathTest, AfterTheSessionOfARankTheLaunchersSignalIsIgnored) {
  EXPECT_EXIT(
      {
        SignalGuard::ignore_after_session();
        { SignalGuard guard; }
        std::raise(SIGTERM);
        std::raise(SIGINT);
        std::_Exit(75);
      },
      ::testing::ExitedWithCode(75), "");
}

// Before its session a rank ends on the signal, as without a handler.
TEST(SignalGuardDeathTest, BeforeTheSessionOfARankTheSignalEndsIt) {
  EXPECT_EXIT(
      {
        SignalGuard::ignore_after_session();
        std::raise(SIGTERM);
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGTERM), "");
}

TEST(SignalGuard, RestoresPreviousHandlers) {
  { SignalGuard guard; }
  struct sigaction sa {};
  sigaction(SIGTERM, nullptr, &sa);
  EXPECT_EQ(sa.sa_handler, SIG_DFL);
}

}  // namespace
}  // namespace frugal
