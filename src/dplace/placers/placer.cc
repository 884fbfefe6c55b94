#include "dplace/placers/placer.h"

namespace dplace {

StatusOr<PlaceResult> Placer::DoPlace(const PlacementProblem& problem,
                                      const PlaceContext& context) {
  DPLACE_ASSIGN_OR_RETURN(Placement placement, PlaceOps(problem));
  PlaceResult result;
  result.placement = std::move(placement);
  return result;
}

}  // namespace dplace
