#include "dplace/method/method.h"

#include <algorithm>
#include <chrono>

namespace dplace {
namespace {

std::vector<MethodEntry>& Registry() {
  static std::vector<MethodEntry>* registry = new std::vector<MethodEntry>();
  return *registry;
}

}  // namespace

Clock SteadyClock() {
  return [] {
    return std::chrono::duration<double>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
}

Status CheckPlaceable(const PlacementProblem& problem, bool need_gpu) {
  const Graph& g = *problem.graph;
  const Cluster& c = *problem.cluster;
  if (need_gpu && c.DevicesOfKind(DeviceKind::kGpu).empty()) {
    return InfeasibleError("cluster " + c.name() + " has no GPU");
  }
  DeviceKindSet kinds;
  for (const Device& d : c.devices()) kinds.Add(d.kind);
  for (OpId op = 0; op < g.num_ops(); ++op) {
    if ((g.allowed_devices(op).bits() & kinds.bits()) == 0) {
      return InfeasibleError("op " + g.op_name(op) +
                             " may run on no device of cluster " + c.name());
    }
  }
  return Status::Ok();
}

StatusOr<PlaceResult> Method::Place(const PlacementProblem& problem,
                                    const PlaceContext& context) {
  StatusOr<PlaceResult> result = DoPlace(problem, context);
  if (!result.ok()) return result.status().WithPrefix("method " + name_);
  return result;
}

bool RegisterMethod(MethodEntry entry) {
  Registry().push_back(std::move(entry));
  return true;
}

std::vector<const MethodEntry*> Methods() {
  std::vector<const MethodEntry*> out;
  for (const MethodEntry& e : Registry()) out.push_back(&e);
  std::sort(out.begin(), out.end(),
            [](const MethodEntry* a, const MethodEntry* b) {
              return a->rank != b->rank ? a->rank < b->rank : a->name < b->name;
            });
  return out;
}

const MethodEntry* FindMethod(std::string_view name) {
  for (const MethodEntry& e : Registry()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::string MethodNames() {
  std::string known;
  for (const MethodEntry* e : Methods()) {
    known += (known.empty() ? "" : ", ") + e->name;
  }
  return known;
}

StatusOr<std::unique_ptr<Method>> MakeMethod(std::string_view name,
                                             const MethodOptions& options) {
  const MethodEntry* entry = FindMethod(name);
  if (!entry) {
    return NotFoundError("unknown method \"" + std::string(name) +
                         "\" (methods: " + MethodNames() + ")");
  }
  StatusOr<std::unique_ptr<Method>> method = entry->make(options);
  if (method.ok()) (*method)->options_ = options;
  return method;
}

MethodTraits TraitsOf(const MethodEntry& entry) {
  StatusOr<std::unique_ptr<Method>> method = entry.make({});
  // Every registered method is made at its defaults (placers_test).
  return method.ok() ? (*method)->traits() : MethodTraits{};
}

bool IsSearchMethod(std::string_view name) {
  const MethodEntry* entry = FindMethod(name);
  return entry != nullptr && TraitsOf(*entry).searches;
}

bool IsLearnedMethod(std::string_view name) {
  const MethodEntry* entry = FindMethod(name);
  return entry != nullptr && TraitsOf(*entry).learns;
}

double DefaultCheckpointSeconds(std::string_view name) {
  return IsLearnedMethod(name) ? 0 : 1;
}

}  // namespace dplace
