#include "dplace/search/start_placements.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
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
    const PlacerProgress& progress) {
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
    if (progress) progress(1, 1, {start});
    StatusOr<PlaceResult> placed = method->Place(problem);
    if (!placed.ok()) return placed.status().WithPrefix("start");
    candidates.push_back(std::move(placed->placement));
    return candidates;
  }
  // The placers that keep no process-wide state run on helper threads
  // beside the others, which run here one after another (MethodTraits::
  // thread_safe). The candidates keep the placers' order either way.
  const std::vector<std::string> names = AutoStartMethods(problem);
  const int n = static_cast<int>(names.size());
  std::vector<std::unique_ptr<Method>> methods;
  std::vector<int> alone, beside;
  for (int i = 0; i < n; ++i) {
    StatusOr<std::unique_ptr<Method>> method = MakeMethod(names[i]);
    if (!method.ok()) return method.status().WithPrefix("start auto");
    methods.push_back(*std::move(method));
    (methods[i]->traits().thread_safe ? beside : alone).push_back(i);
  }
  std::vector<StatusOr<PlaceResult>> placed(n, InternalError("not run"));
  std::mutex mu;
  int started = 0;           // Guarded by mu.
  std::vector<int> running;  // Guarded by mu; the latest started first.
  // The first exception a placer or `progress` threw (guarded by mu): the
  // others stop, and it is thrown here once every thread is joined.
  std::exception_ptr thrown;
  // Tells `progress` what runs; mu held.
  const auto report = [&] {
    if (!progress || thrown) return;
    std::vector<std::string> now;
    for (int k : running) now.push_back(names[k]);
    try {
      progress(started, n, now);
    } catch (...) {
      thrown = std::current_exception();
    }
  };
  const auto place = [&](int i) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (thrown) return;
      ++started;
      running.insert(running.begin(), i);
      report();
      if (thrown) return;
    }
    try {
      placed[i] = methods[i]->Place(problem);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!thrown) thrown = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu);
    running.erase(std::find(running.begin(), running.end(), i));
    if (!running.empty()) report();
  };
  std::atomic<size_t> next{0};
  const auto place_beside = [&] {
    for (size_t k; (k = next++) < beside.size();) place(beside[k]);
  };
  const int helpers =
      std::min<int>(static_cast<int>(beside.size()),
                    static_cast<int>(std::thread::hardware_concurrency()) - 1);
  std::vector<std::thread> threads;
  for (int h = 0; h < helpers; ++h) {
    try {
      threads.emplace_back(place_beside);
    } catch (const std::system_error&) {
      break;  // No more threads to be had: the rest run here.
    }
  }
  for (int i : alone) place(i);
  place_beside();
  for (std::thread& t : threads) t.join();
  if (thrown) std::rethrow_exception(thrown);

  std::string why;
  for (int i = 0; i < n; ++i) {
    // A placer that cannot place this problem is not a candidate.
    if (!placed[i].ok()) {
      why += (why.empty() ? "" : "; ") + placed[i].status().message();
      continue;
    }
    candidates.push_back(std::move(placed[i]->placement));
  }
  if (candidates.empty()) {
    return InfeasibleError("start auto: no placer could place: " + why);
  }
  return candidates;
}

std::string StartPlacerStage(int started, int num_placers,
                             const std::vector<std::string>& running) {
  std::string stage = "one-shot placer " + std::to_string(started) + " of " +
                      std::to_string(num_placers) + ": ";
  for (size_t i = 0; i < running.size(); ++i) {
    if (i > 0) stage += i + 1 == running.size() ? " and " : ", ";
    stage += running[i];
  }
  return stage;
}

}  // namespace dplace
