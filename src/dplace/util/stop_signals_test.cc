#include "dplace/util/stop_signals.h"

#include <gtest/gtest.h>

#include <csignal>

namespace dplace {
namespace {

TEST(StopSignalsTest, ASignalIsRecordedNotFatal) {
  for (int signal : {SIGINT, SIGTERM}) {
    StopSignals stop;
    const std::function<bool()> requested = stop.Request();
    EXPECT_EQ(stop.signal(), 0);
    EXPECT_FALSE(requested());
    ASSERT_EQ(std::raise(signal), 0);
    EXPECT_EQ(stop.signal(), signal);
    EXPECT_TRUE(requested());
  }
}

TEST(StopSignalsTest, ANewOneStartsClear) {
  {
    StopSignals stop;
    ASSERT_EQ(std::raise(SIGTERM), 0);
  }
  StopSignals stop;
  EXPECT_EQ(stop.signal(), 0);
}

TEST(StopSignalsDeathTest, ASecondSignalEndsTheProcess) {
  EXPECT_EXIT(
      {
        StopSignals stop;
        std::raise(SIGTERM);
        std::raise(SIGTERM);
        std::_Exit(0);  // Not reached.
      },
      ::testing::KilledBySignal(SIGTERM), "");
}

TEST(StopSignalsDeathTest, TheHandlersEndWithIt) {
  EXPECT_EXIT(
      {
        { StopSignals stop; }
        std::raise(SIGINT);
        std::_Exit(0);  // Not reached.
      },
      ::testing::KilledBySignal(SIGINT), "");
}

TEST(StopSignalsTest, AnIgnoredSignalStaysIgnored) {
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction before;
  ASSERT_EQ(sigaction(SIGINT, &ignore, &before), 0);
  {
    StopSignals stop;
    ASSERT_EQ(std::raise(SIGINT), 0);
    EXPECT_EQ(stop.signal(), 0);
  }
  struct sigaction after;
  ASSERT_EQ(sigaction(SIGINT, &before, &after), 0);
  EXPECT_EQ(after.sa_handler, SIG_IGN);
}

TEST(StopSignalsTest, Names) {
  EXPECT_EQ(StopSignals::Name(SIGINT), "SIGINT");
  EXPECT_EQ(StopSignals::Name(SIGTERM), "SIGTERM");
  EXPECT_EQ(StopSignals::Name(SIGHUP), "signal " + std::to_string(SIGHUP));
}

}  // namespace
}  // namespace dplace
