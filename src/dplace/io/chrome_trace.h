// Chrome-trace export of a simulated step (opens in Perfetto or
// chrome://tracing): one process per device, one thread per compute slot and
// per outgoing link, "X" events in microseconds.
#ifndef DPLACE_IO_CHROME_TRACE_H_
#define DPLACE_IO_CHROME_TRACE_H_

#include <string>

#include "dplace/sim/simulator.h"

namespace dplace {

// REQUIRES: `result` was simulated with SimOptions::record_timeline.
std::string ChromeTraceJson(const Graph& graph, const Cluster& cluster,
                            const SimResult& result);
Status WriteChromeTrace(const Graph& graph, const Cluster& cluster,
                        const SimResult& result, const std::string& path);

}  // namespace dplace

#endif  // DPLACE_IO_CHROME_TRACE_H_
