#include "dplace/sim/lower_bound.h"

#include <algorithm>
#include <cmath>

#include "dplace/util/format.h"

namespace dplace {
namespace {

StepLowerBound Largest(double critical_path, double total_work,
                       double memory_path) {
  if (memory_path > std::max(critical_path, total_work)) {
    return {memory_path, "forced-transfer path"};
  }
  if (critical_path >= total_work) return {critical_path, "critical path"};
  return {total_work, "total work"};
}

}  // namespace

StepLowerBound ProblemLowerBound(const Simulator& simulator) {
  return Largest(simulator.critical_path_bound(), simulator.total_work_bound(),
                 simulator.memory_path_bound());
}

StepLowerBound ProblemLowerBound(const LowerBounds& bounds) {
  StepLowerBound computed =
      Largest(bounds.critical_path, bounds.total_work, bounds.memory_path);
  const StepLowerBound whole = WholeGroupsLowerBound(bounds);
  if (whole.seconds > computed.seconds) computed = whole;
  if (bounds.proven > computed.seconds)
    return {bounds.proven, kProvenBoundName};
  return computed;
}

StepLowerBound WholeGroupsLowerBound(const LowerBounds& bounds) {
  StepLowerBound largest{bounds.memory_path_whole_groups,
                         kWholeGroupsBoundName};
  if (bounds.queued_path_whole_groups > largest.seconds) {
    largest = {bounds.queued_path_whole_groups, kQueuedPathBoundName};
  }
  if (bounds.queued_work_whole_groups > largest.seconds) {
    largest = {bounds.queued_work_whole_groups, kQueuedWorkBoundName};
  }
  return largest;
}

StepLowerBound AnyPlacementLowerBound(const LowerBounds& bounds) {
  LowerBounds any = bounds;
  any.memory_path_whole_groups = 0;
  any.queued_path_whole_groups = 0;
  any.queued_work_whole_groups = 0;
  return ProblemLowerBound(any);
}

bool ProvenOptimal(double step_time, const StepLowerBound& bound) {
  return bound.seconds > 0 && step_time <= bound.seconds * (1 + 1e-9);
}

std::string DescribeGap(double step_time, const StepLowerBound& bound) {
  if (!(bound.seconds > 0) || std::isinf(bound.seconds)) return "";
  return "step time is " + Format("%.3f", step_time / bound.seconds) +
         "x the lower bound" +
         (ProvenOptimal(step_time, bound) ? ": optimal" : "");
}

std::string DescribeLowerBound(const StepLowerBound& bound) {
  if (std::isinf(bound.seconds)) {
    return "none: no placement fits in memory (an op fits on no device)";
  }
  return Format("%.6f s", bound.seconds) + " (" + bound.binding + ")";
}

}  // namespace dplace
