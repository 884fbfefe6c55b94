#include "dplace/search/start_placements.h"

#include <memory>
#include <utility>

#include "dplace/io/placement_json.h"

namespace dplace {

std::vector<std::string> AutoStartMethods(const PlacementProblem& problem) {
  std::vector<std::string> names;
  for (const MethodEntry* entry : Methods()) {
    // The MILP has a time budget of its own (auto gives it one); random
    // is one sample of what a search does better.
    if (entry->name == "milp" || entry->name == "random") continue;
    if (entry->name == "expert" && !problem.expert) continue;
    if (TraitsOf(*entry).searches) continue;
    names.push_back(entry->name);
  }
  return names;
}

bool IsPlacementFile(const std::string& start) {
  return start.size() > 5 && start.compare(start.size() - 5, 5, ".json") == 0;
}

Status CheckStartMethod(const std::string& start) {
  if (start == "auto" || IsPlacementFile(start)) return Status::Ok();
  const MethodEntry* entry = FindMethod(start);
  if (entry == nullptr) {
    return InvalidArgumentError(
        "unknown method (auto, a placement FILE.json, or one of: " +
        MethodNames() + ")");
  }
  if (TraitsOf(*entry).searches) {
    return InvalidArgumentError(
        "a search cannot be a start; name a method that places once, or "
        "auto");
  }
  return Status::Ok();
}

StatusOr<std::vector<Placement>> StartCandidates(
    const PlacementProblem& problem, const std::string& start,
    const std::function<void(int, int, const std::string&)>& before_each) {
  std::vector<Placement> candidates;
  if (IsPlacementFile(start)) {
    StatusOr<Placement> read =
        ReadPlacementJson(start, *problem.graph, *problem.cluster);
    if (!read.ok()) return read.status().WithPrefix("start");
    candidates.push_back(*std::move(read));
    return candidates;
  }
  if (start != "auto") {
    DPLACE_ASSIGN_OR_RETURN(std::unique_ptr<Method> method, MakeMethod(start));
    StatusOr<PlaceResult> placed = method->Place(problem);
    if (!placed.ok()) return placed.status().WithPrefix("start");
    candidates.push_back(std::move(placed->placement));
    return candidates;
  }
  std::string why;
  const std::vector<std::string> names = AutoStartMethods(problem);
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    if (before_each) {
      before_each(static_cast<int>(i), static_cast<int>(names.size()), name);
    }
    StatusOr<std::unique_ptr<Method>> method = MakeMethod(name);
    if (!method.ok()) return method.status().WithPrefix("start auto");
    StatusOr<PlaceResult> placed = (*method)->Place(problem);
    // A placer that cannot place this problem is not a candidate.
    if (!placed.ok()) {
      why += (why.empty() ? "" : "; ") + placed.status().message();
      continue;
    }
    candidates.push_back(std::move(placed->placement));
  }
  if (candidates.empty()) {
    return InfeasibleError("start auto: no placer could place: " + why);
  }
  return candidates;
}

}  // namespace dplace
