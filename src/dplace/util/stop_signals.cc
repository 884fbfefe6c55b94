#include "dplace/util/stop_signals.h"

#include <csignal>

namespace dplace {
namespace {

// The one piece of global mutable state in dplace, and unavoidable: a
// signal handler receives nothing but the signal number, so what it
// records must live at namespace scope, in a volatile sig_atomic_t (the
// only type a handler may write with defined behaviour).
volatile std::sig_atomic_t g_caught_signal = 0;

extern "C" void RecordStopSignal(int signal) { g_caught_signal = signal; }

}  // namespace

StopSignals::StopSignals() {
  g_caught_signal = 0;
  struct sigaction action = {};
  action.sa_handler = RecordStopSignal;
  sigemptyset(&action.sa_mask);
  // SA_RESETHAND: the first signal restores the default action, so a
  // second one ends the process at once. SA_RESTART: system calls under
  // way (a write of the log) go on rather than fail with EINTR.
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGINT, &action, &previous_int_);
  sigaction(SIGTERM, &action, &previous_term_);
  // A signal the process was started to ignore (a background job's
  // SIGINT, nohup) stays ignored.
  if (previous_int_.sa_handler == SIG_IGN)
    sigaction(SIGINT, &previous_int_, nullptr);
  if (previous_term_.sa_handler == SIG_IGN) {
    sigaction(SIGTERM, &previous_term_, nullptr);
  }
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &previous_int_, nullptr);
  sigaction(SIGTERM, &previous_term_, nullptr);
}

int StopSignals::signal() const { return g_caught_signal; }

std::function<bool()> StopSignals::Request() const {
  return [] { return g_caught_signal != 0; };
}

std::string StopSignals::Name(int signal) {
  if (signal == SIGINT) return "SIGINT";
  if (signal == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(signal);
}

}  // namespace dplace
