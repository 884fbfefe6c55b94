// Non-learning placers, registered by name.
//
//   StatusOr<std::unique_ptr<Placer>> placer =
//       MakePlacer("m-etf", PlacerOptions::Parse({"fast=true"}).value());
//   StatusOr<Placement> placement = (*placer)->Place(problem);
//
// A placer returns a valid placement (every op on a device kind it allows)
// or an error saying plainly why it could not place. Memory-aware placers
// respect device capacity as far as their estimate sees it; the simulator
// has the last word on feasibility.
#ifndef DPLACE_PLACERS_PLACER_H_
#define DPLACE_PLACERS_PLACER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "dplace/cost/cost_model.h"
#include "dplace/sim/placement.h"

namespace dplace {

// What every placer sees.
struct PlacementProblem {
  const Graph* graph = nullptr;
  const Cluster* cluster = nullptr;
  const CostModel* cost = nullptr;  // Of `graph` on `cluster`.
  // The model family's human-expert placement (zoo models); empty when the
  // graph has no family (graph JSON, ONNX).
  std::function<Placement()> expert;
  uint64_t seed = 1;
};

class Placer {
 public:
  virtual ~Placer() = default;
  virtual StatusOr<Placement> Place(const PlacementProblem& problem) = 0;
};

// Settings of one placer as key=value strings, from `--option k=v`. Each
// placer reads its settings struct from them with OptionReader.
class PlacerOptions {
 public:
  PlacerOptions() = default;
  // Each item "key=value"; an item without '=' or a repeated key is an error.
  static StatusOr<PlacerOptions> Parse(const std::vector<std::string>& items);
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
};

// Reads typed settings out of PlacerOptions; Finish() reports malformed
// values and keys that no setting read, naming the method and the keys it
// accepts.
class OptionReader {
 public:
  OptionReader(std::string method, const PlacerOptions& options)
      : method_(std::move(method)), options_(&options) {}
  // Each leaves *value unchanged when the key is absent.
  void Int(const std::string& key, int64_t* value);
  void Int(const std::string& key, int* value);
  void Double(const std::string& key, double* value);
  void Bool(const std::string& key, bool* value);  // true/false/1/0.
  void String(const std::string& key, std::string* value);
  Status Finish() const;

 private:
  const std::string* Find(const std::string& key);
  std::string method_;
  const PlacerOptions* options_;
  std::vector<std::string> accepted_;
  std::string first_error_;
};

using PlacerFactory =
    std::function<StatusOr<std::unique_ptr<Placer>>(const PlacerOptions&)>;

struct PlacerEntry {
  std::string name;         // "m-etf"
  int rank = 0;             // Listing order: baselines first.
  std::string description;  // One line for `dplace place --list`.
  PlacerFactory make;
};

// Every registered placer, ordered by rank then name.
std::vector<const PlacerEntry*> Placers();
const PlacerEntry* FindPlacer(std::string_view name);
// Unknown names are errors listing the known ones.
StatusOr<std::unique_ptr<Placer>> MakePlacer(std::string_view name,
                                             const PlacerOptions& options = {});

// Registration at static-initialisation time; use REGISTER_PLACER. Returns
// true so it can initialise a namespace-scope bool.
bool RegisterPlacer(PlacerEntry entry);

#define DPLACE_PLACER_CONCAT_(a, b) a##b
#define DPLACE_PLACER_CONCAT(a, b) DPLACE_PLACER_CONCAT_(a, b)
// REGISTER_PLACER("m-etf", 40, "one line", factory): factory is a
// PlacerFactory. The object file must be linked whole (see CMakeLists.txt).
#define REGISTER_PLACER(name, rank, description, factory)                \
  static const bool DPLACE_PLACER_CONCAT(placer_registered_, __LINE__) = \
      ::dplace::RegisterPlacer({name, rank, description, factory})

// A factory for placers whose only setting is none: rejects every option.
template <typename T>
PlacerFactory NoOptions(const char* name) {
  return
      [name](
          const PlacerOptions& options) -> StatusOr<std::unique_ptr<Placer>> {
        OptionReader reader(name, options);
        Status s = reader.Finish();
        if (!s.ok()) return s;
        return std::unique_ptr<Placer>(new T());
      };
}

}  // namespace dplace

#endif  // DPLACE_PLACERS_PLACER_H_
