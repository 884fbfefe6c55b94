// SIGINT and SIGTERM as a request to stop: a long command (a search, a
// bench) checks the request at points where its files are whole (after a
// batch of samples, after a run), saves what it has and exits 128 + the
// signal (130 / 143), instead of dying in the middle of its work. The
// handler only records the signal; a second signal ends the process at
// once, as it would without the handler.
//
//   StopSignals stop;  // Caught while `stop` lives.
//   options.stop_requested = stop.Request();
//   ... run ...
//   if (stop.signal() != 0) return 128 + stop.signal();
//
// Thread safety: the handler may run on any thread; signal() may be read
// from any. At most one StopSignals may live at a time.
#ifndef DPLACE_UTIL_STOP_SIGNALS_H_
#define DPLACE_UTIL_STOP_SIGNALS_H_

#include <signal.h>

#include <functional>
#include <string>

namespace dplace {

class StopSignals {
 public:
  // Installs the handler for SIGINT and SIGTERM (each that is not ignored:
  // a background job's SIGINT stays ignored) and clears the signal.
  StopSignals();
  // Restores the handlers there were before.
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The signal caught (SIGINT or SIGTERM); 0 while none.
  int signal() const;
  // A function that says whether a signal was caught, for the loops'
  // stop_requested hooks (SearchOptions, BenchRunOptions).
  std::function<bool()> Request() const;

  // "SIGINT", "SIGTERM", or "signal N".
  static std::string Name(int signal);

 private:
  struct sigaction previous_int_;
  struct sigaction previous_term_;
};

}  // namespace dplace

#endif  // DPLACE_UTIL_STOP_SIGNALS_H_
