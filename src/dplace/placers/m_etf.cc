// m-ETF (Baechi): memory-constrained Earliest Task First. List scheduling
// that always starts the ready op on the device where it can start
// earliest, counting transfers on the links and each device's memory.
#include "dplace/placers/baechi_common.h"

namespace dplace {
namespace {

struct EtfSettings {
  // colocate, use_cpu, memory_fraction (see BaechiSettings).
  baechi::BaechiSettings common;
};

class EtfPlacer : public Placer {
 public:
  explicit EtfPlacer(EtfSettings settings) : settings_(settings) {}

  StatusOr<Placement> Place(const PlacementProblem& problem) override {
    StatusOr<baechi::PlacementUnits> units = baechi::MakePlacementUnits(
        problem, settings_.common, "m-etf", /*whole_step_estimate=*/false);
    if (!units.ok()) return units.status();
    StatusOr<baechi::ListSchedule> schedule = baechi::RunListScheduler(
        problem, *units, settings_.common, /*favourite_child=*/{}, "m-etf");
    if (!schedule.ok()) return schedule.status();
    return std::move(schedule->placement);
  }

 private:
  EtfSettings settings_;
};

StatusOr<std::unique_ptr<Placer>> MakeEtf(const PlacerOptions& options) {
  EtfSettings settings;
  OptionReader reader("m-etf", options);
  baechi::ReadBaechiSettings(&reader, &settings.common);
  DPLACE_RETURN_IF_ERROR(reader.Finish());
  DPLACE_RETURN_IF_ERROR(
      baechi::ValidateBaechiSettings("m-etf", settings.common));
  return std::unique_ptr<Placer>(new EtfPlacer(settings));
}

REGISTER_PLACER("m-etf", 31,
                "Baechi's memory-constrained earliest-task-first list "
                "scheduling; options colocate, use_cpu, memory_fraction",
                MakeEtf);

}  // namespace
}  // namespace dplace
