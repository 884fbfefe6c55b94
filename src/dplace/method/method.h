// A method: one way of placing a model. Every placer of dplace is one, the
// classical ones (single device, expert, Scotch, METIS, Baechi's m-*) and
// the searches (the papers' learned agents): a classical placer places once
// and needs no budget; a search evaluates placements through an Environment
// until its budget runs out.
//
//   StatusOr<std::unique_ptr<Method>> method =
//       MakeMethod("m-etf", MethodOptions::Parse({"use_cpu=false"}).value());
//   PlaceContext context;  // A search also needs context.environment.
//   StatusOr<PlaceResult> result = (*method)->Place(problem, context);
//
// Methods register by name (REGISTER_METHOD in their own .cc) and are made
// from the name and their options; RunMethod (method/run.h) adds the
// simulation of the chosen placement. A method returns a valid placement
// (every op on a device kind it allows) or an error saying plainly why it
// could not place; every error of Place begins with "method NAME: ".
// Memory-aware methods respect device capacity as far as their estimate
// sees it; the simulator has the last word on feasibility.
#ifndef DPLACE_METHOD_METHOD_H_
#define DPLACE_METHOD_METHOD_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dplace/cost/cost_model.h"
#include "dplace/env/environment.h"
#include "dplace/graph/placement.h"
#include "dplace/method/options.h"
#include "dplace/method/search.h"

namespace dplace {

// What every method sees.
struct PlacementProblem {
  const Graph* graph = nullptr;
  const Cluster* cluster = nullptr;
  const CostModel* cost = nullptr;  // Of `graph` on `cluster`.
  // The model family's human-expert placement (zoo models); empty when the
  // graph has no family (graph JSON, ONNX).
  std::function<Placement()> expert;
  uint64_t seed = 1;
};

// Checks that every op may run on some device of the cluster and, when
// `need_gpu`, that the cluster has a GPU; errors name the op or the cluster.
Status CheckPlaceable(const PlacementProblem& problem, bool need_gpu = false);

// What kind of method it is, for callers that treat kinds differently.
struct MethodTraits {
  // Searches through PlaceContext::environment within a budget (a learned
  // agent, the local search); a method that does not places once.
  bool searches = false;
  // A search that learns a policy from what it measures (the papers'
  // agents); the tables compare the best of them with the classical ones.
  bool learns = false;
  // Continues from a checkpoint (SearchOptions::resume_path).
  bool can_resume = false;
  // The budget of its paper, for callers that give none; 0 for a method
  // that needs no budget.
  int64_t default_budget_samples = 0;
  // Place may run on one thread while other methods place on others: it
  // keeps no process-wide state. Scotch and METIS draw from one global
  // random state, and GLPK keeps an environment per thread that a thread
  // which ends leaks, so the methods that call them are not.
  bool thread_safe = false;
};

// What a method is given besides the problem. A method that does not learn
// reads none of it.
struct PlaceContext {
  // Where a search evaluates its placements; not owned. Required by a
  // method that learns.
  Environment* environment = nullptr;
  // A search's budget and hooks: log, checkpoint, resume, progress,
  // gradient averaging, clock.
  SearchOptions search;
};

struct PlaceResult {
  Placement placement;
  // A search's trace; all zero and empty for a method that places once.
  SearchTrace search;
  // A lower bound the method proved on the step time of every placement
  // of the problem that fits in memory, in seconds (the MILP's dual bound
  // when every op was a unit of its program); 0: none. Callers take the
  // larger of it and ProblemLowerBound.
  double lower_bound = 0;
  // One line on how the method placed, for the user ("CBC: 96 units, ...");
  // empty: nothing to say.
  std::string note;
};

class Method {
 public:
  explicit Method(std::string name) : name_(std::move(name)) {}
  virtual ~Method() = default;
  Method(const Method&) = delete;
  Method& operator=(const Method&) = delete;

  const std::string& name() const { return name_; }
  // The options it was made with, as given to MakeMethod (empty for a
  // method made otherwise): a search's checkpoint records them, and a
  // resume with others is refused.
  const MethodOptions& options() const { return options_; }
  virtual MethodTraits traits() const { return {}; }

  // Places `problem`'s graph on its cluster. Errors begin with
  // "method NAME: ", added here once.
  StatusOr<PlaceResult> Place(const PlacementProblem& problem,
                              const PlaceContext& context = {});

 protected:
  virtual StatusOr<PlaceResult> DoPlace(const PlacementProblem& problem,
                                        const PlaceContext& context) = 0;

 private:
  friend StatusOr<std::unique_ptr<Method>> MakeMethod(
      std::string_view name, const MethodOptions& options);

  std::string name_;
  MethodOptions options_;
};

using MethodFactory =
    std::function<StatusOr<std::unique_ptr<Method>>(const MethodOptions&)>;

struct MethodEntry {
  std::string name;         // "m-etf"
  int rank = 0;             // Listing order: baselines first.
  std::string description;  // One line for `dplace place --list`.
  MethodFactory make;
};

// Every registered method, ordered by rank then name.
std::vector<const MethodEntry*> Methods();
// nullptr when no method has the name.
const MethodEntry* FindMethod(std::string_view name);
// Every method's name in listing order, comma-separated, for errors.
std::string MethodNames();
// Unknown names are errors listing the known ones; bad options are errors
// naming the method.
StatusOr<std::unique_ptr<Method>> MakeMethod(std::string_view name,
                                             const MethodOptions& options = {});
// The traits of a registered method at its default options.
MethodTraits TraitsOf(const MethodEntry& entry);
// Whether `name` is a registered method whose traits search, or learn;
// false for unknown names.
bool IsSearchMethod(std::string_view name);
bool IsLearnedMethod(std::string_view name);
// The least wall seconds between two checkpoints that place and bench give
// `name`'s search (SearchOptions::checkpoint_min_seconds): 0 for a learned
// agent, whose updates take tens of milliseconds or more; 1 for the others
// (mcmc, auto: an update every batch of 16 samples, thousands a second).
double DefaultCheckpointSeconds(std::string_view name);

// Registration at static-initialisation time; use REGISTER_METHOD. Returns
// true so it can initialise a namespace-scope bool.
bool RegisterMethod(MethodEntry entry);

#define DPLACE_METHOD_CONCAT_(a, b) a##b
#define DPLACE_METHOD_CONCAT(a, b) DPLACE_METHOD_CONCAT_(a, b)
// REGISTER_METHOD("m-etf", 31, "one line", factory): factory is a
// MethodFactory. The object file must be linked whole
// (dplace_add_registry_library in CMake): nothing references it by symbol.
#define REGISTER_METHOD(name, rank, description, factory)                \
  static const bool DPLACE_METHOD_CONCAT(method_registered_, __LINE__) = \
      ::dplace::RegisterMethod({name, rank, description, factory})

}  // namespace dplace

#endif  // DPLACE_METHOD_METHOD_H_
