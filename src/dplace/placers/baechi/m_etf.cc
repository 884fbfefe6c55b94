// m-ETF (Baechi): memory-constrained Earliest Task First. List scheduling
// that always starts the ready op on the device where it can start
// earliest, counting transfers on the links and each device's memory.
#include "dplace/placers/baechi/baechi_common.h"

namespace dplace {
namespace {

struct EtfSettings {
  // colocate, use_cpu, memory_fraction (see BaechiSettings).
  baechi::BaechiSettings common;
};

class EtfPlacer : public Placer {
 public:
  explicit EtfPlacer(EtfSettings settings)
      : Placer("m-etf"), settings_(settings) {}
  MethodTraits traits() const override { return ThreadSafePlacerTraits(); }

  StatusOr<Placement> PlaceOps(const PlacementProblem& problem) override {
    DPLACE_ASSIGN_OR_RETURN(
        baechi::PlacementUnits units,
        baechi::MakePlacementUnits(problem, settings_.common,
                                   /*whole_step_estimate=*/false));
    DPLACE_ASSIGN_OR_RETURN(
        baechi::ListSchedule schedule,
        baechi::RunListScheduler(problem, units, settings_.common,
                                 /*favourite_child=*/{}));
    return std::move(schedule.placement);
  }

 private:
  EtfSettings settings_;
};

StatusOr<std::unique_ptr<Method>> MakeEtf(const MethodOptions& options) {
  EtfSettings settings;
  OptionReader reader("m-etf", options);
  baechi::ReadBaechiSettings(&reader, &settings.common);
  DPLACE_RETURN_IF_ERROR(reader.Finish());
  DPLACE_RETURN_IF_ERROR(
      baechi::ValidateBaechiSettings("m-etf", settings.common));
  return std::unique_ptr<Method>(new EtfPlacer(settings));
}

REGISTER_METHOD("m-etf", 31,
                "Baechi's memory-constrained earliest-task-first list "
                "scheduling; options colocate, use_cpu, memory_fraction",
                MakeEtf);

}  // namespace
}  // namespace dplace
