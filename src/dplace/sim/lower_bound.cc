#include "dplace/sim/lower_bound.h"

#include "dplace/util/format.h"

namespace dplace {
namespace {

StepLowerBound Larger(double critical_path, double total_work) {
  if (critical_path >= total_work) return {critical_path, "critical path"};
  return {total_work, "total work"};
}

}  // namespace

StepLowerBound ProblemLowerBound(const Simulator& simulator) {
  return Larger(simulator.critical_path_bound(), simulator.total_work_bound());
}

StepLowerBound ProblemLowerBound(const LowerBounds& bounds) {
  return Larger(bounds.critical_path, bounds.total_work);
}

std::string DescribeLowerBound(const StepLowerBound& bound) {
  return Format("%.6f s", bound.seconds) + " (" + bound.binding + ")";
}

}  // namespace dplace
