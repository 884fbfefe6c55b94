#include "dplace/placers/milp_placer.h"

#include <coin/Cbc_C_Interface.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "dplace/graph/placement.h"
#include "dplace/placers/contiguous_split.h"
#include "dplace/sim/device_classes.h"
#include "dplace/sim/simulator.h"

namespace dplace {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// CBC's bound is an LP's, exact up to its tolerances: it is lowered by
// this fraction before it is called a bound of the step.
constexpr double kBoundSafety = 1e-6;

struct CbcDeleter {
  void operator()(Cbc_Model* model) const { Cbc_deleteModel(model); }
};

// The program's data: units, their times per device, memory, and the
// heaviest tensor between each pair of units.
struct UnitProblem {
  int num_units = 0;
  std::vector<int32_t> unit_of_op;
  std::vector<std::vector<double>> time;  // [unit][device]; inf: not there.
  std::vector<int64_t> memory;            // Per unit.
  struct Edge {
    int from, to;
    bool control;  // Only control edges between them.
    int64_t bytes;
  };
  std::vector<Edge> edges;
};

UnitProblem MakeUnitProblem(const PlacementProblem& problem, int max_units,
                            bool* op_level) {
  const Graph& g = *problem.graph;
  const Cluster& c = *problem.cluster;
  UnitProblem p;
  *op_level = g.num_ops() <= max_units;
  if (*op_level) {
    p.num_units = g.num_ops();
    p.unit_of_op.resize(g.num_ops());
    for (OpId op = 0; op < g.num_ops(); ++op) p.unit_of_op[op] = op;
  } else {
    SplitUnits units = MakeSplitUnits(g, max_units);
    p.num_units = units.num_units;
    p.unit_of_op = std::move(units.unit_of_op);
  }
  const int n = p.num_units;
  p.time.assign(n, std::vector<double>(c.num_devices(), 0));
  p.memory.assign(n, 0);
  std::vector<std::vector<char>> allowed(n,
                                         std::vector<char>(c.num_devices(), 0));
  for (OpId op = 0; op < g.num_ops(); ++op) {
    const int u = p.unit_of_op[op];
    // Only persistent bytes: a bound of every device's peak.
    p.memory[u] += g.persistent_bytes(op);
    for (DeviceId d = 0; d < c.num_devices(); ++d) {
      const double t = problem.cost->OpTime(op, d);
      if (t < kInfinity) {
        allowed[u][d] = 1;
        p.time[u][d] += t;
      } else {
        // An op its unit's device may not run goes to its first allowed
        // device; counted there (coarse units only).
        p.time[u][d] += problem.cost->OpTime(op, AllowedDevices(g, c, op)[0]);
      }
    }
  }
  for (int u = 0; u < n; ++u) {
    for (DeviceId d = 0; d < c.num_devices(); ++d) {
      if (!allowed[u][d]) p.time[u][d] = kInfinity;
    }
  }
  std::map<std::pair<int, int>, UnitProblem::Edge> edges;
  for (EdgeId e = 0; e < g.num_edges(); ++e) {
    const int a = p.unit_of_op[g.edge_src(e)];
    const int b = p.unit_of_op[g.edge_dst(e)];
    if (a == b) continue;
    const bool control = g.is_control(e);
    const int64_t bytes = control ? 0 : g.tensor_bytes(g.edge_tensor(e));
    auto [it, added] = edges.insert({{a, b}, {a, b, control, bytes}});
    if (!added) {
      it->second.control = it->second.control && control;
      it->second.bytes = std::max(it->second.bytes, bytes);
    }
  }
  for (const auto& [key, edge] : edges) p.edges.push_back(edge);
  return p;
}

// Builds and solves the program with CBC's C interface.
class MilpModel {
 public:
  MilpModel(const PlacementProblem& problem, const UnitProblem& units)
      : problem_(problem),
        units_(units),
        classes_(ClassesOf(*problem.cost)),
        transfers_(*problem.cost, classes_),
        model_(Cbc_newModel()) {
    const Cluster& c = *problem.cluster;
    class_of_.resize(c.num_devices());
    for (int k = 0; k < classes_.num(); ++k) {
      for (DeviceId d : classes_.members[k]) class_of_[d] = k;
    }
  }

  void Build() {
    const int n = units_.num_units;
    const Cluster& c = *problem_.cluster;
    const int nd = c.num_devices();
    t_ = AddColumn(0, kInfinity, 1, false);
    x_.assign(n, std::vector<int>(nd, -1));
    start_.resize(n);
    for (int u = 0; u < n; ++u) {
      start_[u] = AddColumn(0, kInfinity, 0, false);
      for (DeviceId d = 0; d < nd; ++d) {
        if (units_.time[u][d] < kInfinity) x_[u][d] = AddColumn(0, 1, 0, true);
      }
    }
    for (int u = 0; u < n; ++u) {
      Row assign;  // Each unit on one device.
      for (DeviceId d = 0; d < nd; ++d) {
        if (x_[u][d] >= 0) assign.Add(x_[u][d], 1);
      }
      AddRow(assign, 'E', 1);
      Row finish = Finish(u);  // T >= S[u] + time of u.
      finish.Add(t_, 1);
      AddRow(finish, 'G', 0);
    }
    for (DeviceId d = 0; d < nd; ++d) {
      Row load, memory;
      load.Add(t_, 1);
      int64_t total = 0;
      for (int u = 0; u < n; ++u) {
        if (x_[u][d] < 0) continue;
        load.Add(x_[u][d], -units_.time[u][d] / c.device(d).compute_slots);
        memory.Add(x_[u][d], static_cast<double>(units_.memory[u]));
        total += units_.memory[u];
      }
      AddRow(load, 'G', 0);
      if (total > c.device(d).memory_bytes) {
        AddRow(memory, 'L', static_cast<double>(c.device(d).memory_bytes));
      }
    }
    for (const UnitProblem::Edge& e : units_.edges) Precedence(e);
    if (n <= kOrderedUnits) Serialize();
    BreakSymmetry();
    Cbc_setObjSense(model_.get(), 1);
  }

  // CBC's first solution: `placement`'s device of each unit (the most
  // common of its ops), with identical devices renamed in order of first
  // use, as BreakSymmetry asks.
  void Start(const Placement& placement) {
    const int n = units_.num_units;
    std::vector<DeviceId> device(n, -1);
    std::vector<std::map<DeviceId, int>> votes(n);
    for (size_t op = 0; op < placement.size(); ++op) {
      ++votes[units_.unit_of_op[op]][placement[op]];
    }
    for (int u = 0; u < n; ++u) {
      int most = -1;
      for (const auto& [d, count] : votes[u]) {
        if (x_[u][d] >= 0 && count > most) {
          most = count;
          device[u] = d;
        }
      }
      if (device[u] < 0) return;  // Not a start the program can take.
    }
    std::vector<DeviceId> renamed(problem_.cluster->num_devices(), -1);
    std::vector<size_t> next(classes_.num(), 0);
    for (int u = 0; u < n; ++u) {
      DeviceId& r = renamed[device[u]];
      if (r < 0) {
        const int k = class_of_[device[u]];
        r = classes_.members[k][next[k]++];
      }
      device[u] = r;
    }
    std::vector<int> columns;
    std::vector<double> values;
    for (int u = 0; u < n; ++u) {
      for (DeviceId d = 0; d < problem_.cluster->num_devices(); ++d) {
        if (x_[u][d] < 0) continue;
        columns.push_back(x_[u][d]);
        values.push_back(d == device[u] ? 1 : 0);
      }
    }
    Cbc_setMIPStartI(model_.get(), static_cast<int>(columns.size()),
                     columns.data(), values.data());
  }

  Status Solve(double seconds) {
    Cbc_setLogLevel(model_.get(), 0);
    Cbc_setParameter(model_.get(), "timeMode", "elapsed");  // Wall time.
    Cbc_setMaximumSeconds(model_.get(), seconds);
    if (Cbc_solve(model_.get()) < 0) return InternalError("CBC failed");
    return Status::Ok();
  }

  // The solution's device of every unit; empty when CBC has none.
  std::vector<DeviceId> Devices() const {
    if (Cbc_numberSavedSolutions(model_.get()) < 1 &&
        !Cbc_isProvenOptimal(model_.get())) {
      return {};
    }
    const double* x = Cbc_getColSolution(model_.get());
    std::vector<DeviceId> device(units_.num_units, 0);
    for (int u = 0; u < units_.num_units; ++u) {
      double best = -1;
      for (DeviceId d = 0; d < problem_.cluster->num_devices(); ++d) {
        if (x_[u][d] >= 0 && x[x_[u][d]] > best) {
          best = x[x_[u][d]];
          device[u] = d;
        }
      }
    }
    return device;
  }
  double Objective() const { return Cbc_getObjValue(model_.get()); }
  double Bound() const { return Cbc_getBestPossibleObjValue(model_.get()); }
  bool Optimal() const { return Cbc_isProvenOptimal(model_.get()) != 0; }

 private:
  struct Row {
    std::vector<int> columns;
    std::vector<double> values;
    void Add(int column, double value) {
      columns.push_back(column);
      values.push_back(value);
    }
  };

  int AddColumn(double lo, double hi, double objective, bool integer) {
    Cbc_addCol(model_.get(), "", lo,
               hi == kInfinity ? std::numeric_limits<double>::max() : hi,
               objective, integer ? 1 : 0, 0, nullptr, nullptr);
    return columns_++;
  }
  // CBC takes each column once per row: repeated terms are summed here.
  void AddRow(const Row& row, char sense, double rhs) {
    std::map<int, double> terms;
    for (size_t i = 0; i < row.columns.size(); ++i) {
      terms[row.columns[i]] += row.values[i];
    }
    std::vector<int> columns;
    std::vector<double> values;
    for (const auto& [column, value] : terms) {
      if (value == 0) continue;
      columns.push_back(column);
      values.push_back(value);
    }
    Cbc_addRow(model_.get(), "", static_cast<int>(columns.size()),
               columns.data(), values.data(), sense, rhs);
  }

  // -(S[u] + time of u), as terms of a row.
  Row Finish(int u) const {
    Row row;
    row.Add(start_[u], -1);
    for (DeviceId d = 0; d < problem_.cluster->num_devices(); ++d) {
      if (x_[u][d] >= 0) row.Add(x_[u][d], -units_.time[u][d]);
    }
    return row;
  }
  // Sum of x[u][d] over the devices of class k, as terms.
  void AddClass(Row* row, int u, int k, double coefficient) const {
    for (DeviceId d : classes_.members[k]) {
      if (x_[u][d] >= 0) row->Add(x_[u][d], coefficient);
    }
  }

  // S[b] >= S[a] + time of a, plus the transfer when they sit apart: for
  // classes ka != kb, tau x (X[a][ka] + X[b][kb] - 1); for one class k,
  // tau x (X[a][k] + X[b][k] + differ - 2), differ >= x[a][d] - x[b][d].
  void Precedence(const UnitProblem::Edge& e) {
    Row base = Finish(e.from);
    base.Add(start_[e.to], 1);
    AddRow(base, 'G', 0);
    int differ = -1;
    for (int ka = 0; ka < classes_.num(); ++ka) {
      for (int kb = 0; kb < classes_.num(); ++kb) {
        const double tau = transfers_.Seconds(ka, kb, e.control, e.bytes);
        if (!(tau > 0) || tau == kInfinity) continue;
        Row row = base;
        AddClass(&row, e.from, ka, -tau);
        AddClass(&row, e.to, kb, -tau);
        if (ka != kb) {
          AddRow(row, 'G', -tau);
          continue;
        }
        if (differ < 0) differ = Differ(e.from, e.to);
        row.Add(differ, -tau);
        AddRow(row, 'G', -2 * tau);
      }
    }
  }
  // A variable at least x[a][d] - x[b][d] for every device d: 1 when a and
  // b sit on different devices.
  int Differ(int a, int b) {
    const int v = AddColumn(0, 1, 0, false);
    for (DeviceId d = 0; d < problem_.cluster->num_devices(); ++d) {
      if (x_[a][d] < 0) continue;
      Row row;
      row.Add(v, 1);
      row.Add(x_[a][d], -1);
      if (x_[b][d] >= 0) row.Add(x_[b][d], 1);
      AddRow(row, 'G', 0);
    }
    return v;
  }

  // Small programs model each one-slot device's queue too: of two units
  // that no path orders, on one such device, one runs after the other
  // (binary o: a before b). M is the serial time of everything.
  void Serialize() {
    const int n = units_.num_units;
    std::vector<std::vector<char>> reach(n, std::vector<char>(n, 0));
    std::vector<std::vector<int>> out(n);
    for (const UnitProblem::Edge& e : units_.edges) out[e.from].push_back(e.to);
    for (int a = 0; a < n; ++a) {  // Depth-first from each unit.
      std::vector<int> stack = out[a];
      while (!stack.empty()) {
        const int b = stack.back();
        stack.pop_back();
        if (reach[a][b]) continue;
        reach[a][b] = 1;
        for (int c : out[b]) stack.push_back(c);
      }
    }
    const Cluster& c = *problem_.cluster;
    double big = 0;
    for (int u = 0; u < n; ++u) {
      double slowest = 0;
      for (DeviceId d = 0; d < c.num_devices(); ++d) {
        if (units_.time[u][d] < kInfinity) {
          slowest = std::max(slowest, units_.time[u][d]);
        }
      }
      big += slowest;
    }
    for (const UnitProblem::Edge& e : units_.edges) {
      double slowest = 0;
      for (int ka = 0; ka < classes_.num(); ++ka) {
        for (int kb = 0; kb < classes_.num(); ++kb) {
          const double tau = transfers_.Seconds(ka, kb, e.control, e.bytes);
          if (tau < kInfinity) slowest = std::max(slowest, tau);
        }
      }
      big += slowest;
    }
    for (int a = 0; a < n; ++a) {
      for (int b = a + 1; b < n; ++b) {
        if (reach[a][b] || reach[b][a]) continue;
        int order = -1;
        for (DeviceId d = 0; d < c.num_devices(); ++d) {
          if (c.device(d).compute_slots != 1 || x_[a][d] < 0 || x_[b][d] < 0) {
            continue;
          }
          if (order < 0) order = AddColumn(0, 1, 0, true);
          // S[b] >= S[a] + time of a - M (1 - o) - M (2 - x[a][d] - x[b][d]).
          Row after = Finish(a);
          after.Add(start_[b], 1);
          after.Add(order, -big);
          after.Add(x_[a][d], -big);
          after.Add(x_[b][d], -big);
          AddRow(after, 'G', -3 * big);
          // S[a] >= S[b] + time of b - M o - M (2 - x[a][d] - x[b][d]).
          Row before = Finish(b);
          before.Add(start_[a], 1);
          before.Add(order, big);
          before.Add(x_[a][d], -big);
          before.Add(x_[b][d], -big);
          AddRow(before, 'G', -2 * big);
        }
      }
    }
  }

  // Programs of at most this many units model the device queues.
  static constexpr int kOrderedUnits = 40;

  // Identical devices are interchangeable: the (j+1)-th of a class takes
  // unit u only if the j-th took a unit at or before u.
  void BreakSymmetry() {
    for (int k = 0; k < classes_.num(); ++k) {
      const std::vector<DeviceId>& devices = classes_.members[k];
      for (size_t j = 0; j + 1 < devices.size(); ++j) {
        Row row;
        for (int u = 0; u < units_.num_units; ++u) {
          if (x_[u][devices[j]] >= 0) row.Add(x_[u][devices[j]], 1);
          if (x_[u][devices[j + 1]] < 0) continue;
          Row at_u = row;
          at_u.Add(x_[u][devices[j + 1]], -1);
          AddRow(at_u, 'G', 0);
        }
      }
    }
  }

  const PlacementProblem& problem_;
  const UnitProblem& units_;
  const DeviceClasses classes_;
  const ClassTransfers transfers_;
  std::vector<int> class_of_;
  std::unique_ptr<Cbc_Model, CbcDeleter> model_;
  int columns_ = 0;
  int t_ = -1;
  std::vector<std::vector<int>> x_;
  std::vector<int> start_;
};

}  // namespace

StatusOr<MilpResult> SolveMilp(const PlacementProblem& problem,
                               const Placement& start,
                               const MilpOptions& options) {
  DPLACE_RETURN_IF_ERROR(CheckPlaceable(problem));
  MilpResult result;
  const UnitProblem units =
      MakeUnitProblem(problem, options.max_units, &result.op_level);
  result.units = units.num_units;
  MilpModel model(problem, units);
  model.Build();
  if (!start.empty()) model.Start(start);
  DPLACE_RETURN_IF_ERROR(model.Solve(options.seconds));
  const std::vector<DeviceId> devices = model.Devices();
  if (devices.empty()) {
    if (start.empty()) return InfeasibleError("CBC found no placement");
    result.placement = start;
  } else {
    const Graph& g = *problem.graph;
    result.placement.resize(g.num_ops());
    for (OpId op = 0; op < g.num_ops(); ++op) {
      const DeviceId d = devices[units.unit_of_op[op]];
      result.placement[op] = problem.cost->OpTime(op, d) < kInfinity
                                 ? d
                                 : AllowedDevices(g, *problem.cluster, op)[0];
    }
    result.objective = model.Objective();
  }
  result.bound = std::max(0.0, model.Bound() * (1 - kBoundSafety));
  result.proven_optimal = model.Optimal();
  return result;
}

namespace {

// "milp": the program from the fastest, in the simulator, of the start
// methods' placements, keeping whichever of that start and CBC's best
// simulates faster.
class MilpMethod : public Method {
 public:
  MilpMethod(MilpOptions options, std::vector<std::string> starts)
      : Method("milp"), options_(options), starts_(std::move(starts)) {}

 protected:
  StatusOr<PlaceResult> DoPlace(const PlacementProblem& problem,
                                const PlaceContext& context) override {
    Simulator simulator(*problem.cost);
    Placement best;
    double best_time = kInfinity;
    bool best_feasible = false;
    auto consider = [&](const Placement& p) -> Status {
      DPLACE_ASSIGN_OR_RETURN(SimResult r, simulator.Simulate(p));
      if ((r.feasible && !best_feasible) ||
          (r.feasible == best_feasible && r.step_time < best_time)) {
        best = p;
        best_time = r.step_time;
        best_feasible = r.feasible;
      }
      return Status::Ok();
    };
    for (const std::string& name : starts_) {
      DPLACE_ASSIGN_OR_RETURN(std::unique_ptr<Method> method, MakeMethod(name));
      StatusOr<PlaceResult> placed = method->Place(problem);
      // A placer that cannot place this problem is not a start.
      if (placed.ok()) DPLACE_RETURN_IF_ERROR(consider(placed->placement));
    }
    DPLACE_ASSIGN_OR_RETURN(MilpResult milp,
                            SolveMilp(problem, best, options_));
    DPLACE_RETURN_IF_ERROR(consider(milp.placement));
    PlaceResult result;
    result.placement = std::move(best);
    if (milp.op_level) result.lower_bound = milp.bound;
    result.note = "CBC: " + std::to_string(milp.units) +
                  (milp.op_level ? " units (every op)" : " units (coarsened)") +
                  ", program " +
                  (milp.proven_optimal ? "solved to optimality"
                                       : "stopped at its time limit") +
                  ", its bound " + std::to_string(milp.bound) + " s" +
                  (milp.op_level ? "" : " (of the coarse problem only)");
    return result;
  }

 private:
  MilpOptions options_;
  std::vector<std::string> starts_;
};

// The start, as option start=NAME: one method that places once, or "best"
// (the default): the fastest of the splits, m-ETF and mincut.
StatusOr<std::unique_ptr<Method>> MakeMilp(const MethodOptions& options) {
  MilpOptions s;
  std::string start = "best";
  OptionReader reader("milp", options);
  reader.Double("seconds", &s.seconds);
  reader.Int("max_units", &s.max_units);
  reader.String("start", &start);
  DPLACE_RETURN_IF_ERROR(reader.Finish());
  auto bad = [](const std::string& what) {
    return InvalidArgumentError("method milp: option " + what);
  };
  if (!(s.seconds > 0 && std::isfinite(s.seconds))) {
    return bad("seconds must be > 0");
  }
  if (s.max_units < 2) return bad("max_units must be >= 2");
  std::vector<std::string> starts = {"split-dp", "tarnawski-dp", "m-etf",
                                     "mincut"};
  if (start != "best") {
    const MethodEntry* entry = FindMethod(start);
    if (entry == nullptr || start == "milp" || TraitsOf(*entry).searches) {
      return bad("start=" + start +
                 ": expected best or a method that places once (methods: " +
                 MethodNames() + ")");
    }
    starts = {start};
  }
  return std::unique_ptr<Method>(new MilpMethod(s, std::move(starts)));
}

}  // namespace

REGISTER_METHOD("milp", 40,
                "a mixed-integer program of the placement (precedence, "
                "transfers, memory, load; queues relaxed) solved by COIN-OR "
                "CBC from the best classical placement; its dual bound holds "
                "for every placement when every op is a unit; options "
                "seconds (default 20), max_units (200), start (best)",
                MakeMilp);

}  // namespace dplace
