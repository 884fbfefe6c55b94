// "path-guided": the placement the forced-transfer path bound reads off
// (sim/path_bound.h): where the bound's choices agree along every path,
// its step time is the bound itself, so the certificate comes with it.
#include "dplace/graph/placement.h"
#include "dplace/placers/placer.h"
#include "dplace/sim/path_bound.h"

namespace dplace {
namespace {

class PathGuidedPlacer : public Placer {
 public:
  using Placer::Placer;
  StatusOr<Placement> PlaceOps(const PlacementProblem& problem) override {
    DPLACE_RETURN_IF_ERROR(CheckPlaceable(problem));
    return PathGuidedPlacement(*problem.cost);
  }
};

}  // namespace

REGISTER_METHOD("path-guided", 36,
                "the placement read off the forced-transfer path bound: each "
                "op on the device class its most critical consumer's bound "
                "chose, sharing its device where the bound did",
                NoOptions<PathGuidedPlacer>("path-guided"));

}  // namespace dplace
