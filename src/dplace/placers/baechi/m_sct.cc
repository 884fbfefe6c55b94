// m-SCT (Baechi): memory-constrained Small Communication Time scheduling.
// An LP relaxation picks each op's favourite child, the one whose edge it
// pays most to keep on one device; the list scheduler then keeps a device
// for its last op's favourite child (see RunListScheduler).
//
// The LP (Hanen and Munier's, as Baechi states it), over one piece of the
// graph: minimise the makespan w subject to
//   s_j >= s_i + p_i + c_ij x_ij   for every edge i -> j,
//   sum_j x_ij >= out_degree(i) - 1,  sum_i x_ij >= in_degree(j) - 1,
//   s_i + p_i <= w,  0 <= x_ij <= 1,  s_i >= 0,
// with p_i the op's time, c_ij the edge's transfer time and x_ij = 0 when
// j is i's favourite child (no transfer). x_ij below `threshold` makes j the
// favourite, at most one child per op and one parent per op, smallest x_ij
// first.
//
// Scale: GLPK's simplex is solved per weakly-connected piece of the graph;
// a piece larger than lp_max_ops ops is cut into windows of consecutive
// topological ranks, solved in order. An edge between windows is never a
// favourite edge: it is fixed to x = 1, and its source's start time, from
// the earlier window's solution, bounds its destination's.
#include <glpk.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "dplace/placers/baechi/baechi_common.h"

namespace dplace {
namespace {

struct SctSettings {
  // colocate, use_cpu, memory_fraction (see BaechiSettings).
  baechi::BaechiSettings common;
  // LP value of x_ij below which j becomes i's favourite child.
  // Default: 0.5.
  double threshold = 0.5;
  // Most ops in one LP; larger pieces are solved in windows (see above).
  // Default: 1000.
  int lp_max_ops = 1000;
  // Seconds GLPK may spend on one LP before m-SCT gives up with an error.
  // Default: 60.
  double lp_time_limit = 60;
};

// One op pair with at least one edge between them.
struct Pair {
  OpId src, dst;
  double comm;  // Transfer time (µs) if src and dst sit apart.
};

// Silences GLPK's terminal output while alive, restoring it afterwards.
class QuietGlpk {
 public:
  QuietGlpk() : previous_(glp_term_out(GLP_OFF)) {}
  ~QuietGlpk() { glp_term_out(previous_); }

 private:
  int previous_;
};

class FavouriteChildLp {
 public:
  FavouriteChildLp(const PlacementProblem& problem,
                   const baechi::PlacementUnits& units,
                   const SctSettings& settings)
      : g_(*problem.graph), u_(units), settings_(settings) {
    Weights(problem);
    Pairs(problem);
  }

  // favourite[op]: op's favourite child, -1 for none.
  StatusOr<std::vector<OpId>> Solve() {
    start_.assign(g_.num_ops(), 0.0);
    window_.assign(g_.num_ops(), -1);
    value_.assign(pairs_.size(), 1.0);
    std::vector<std::vector<OpId>> windows = Windows();
    for (size_t w = 0; w < windows.size(); ++w) {
      for (OpId op : windows[w]) window_[op] = static_cast<int32_t>(w);
    }
    QuietGlpk quiet;
    for (size_t w = 0; w < windows.size(); ++w) {
      DPLACE_RETURN_IF_ERROR(SolveWindow(static_cast<int32_t>(w), windows[w]));
    }
    return Round();
  }

 private:
  // p_i in microseconds: the op's time on the fastest device it may use.
  void Weights(const PlacementProblem& problem) {
    weight_.resize(g_.num_ops());
    for (OpId op = 0; op < g_.num_ops(); ++op) {
      double best = std::numeric_limits<double>::infinity();
      for (DeviceId d : u_.devices[u_.unit[op]]) {
        best = std::min(best, problem.cost->OpTime(op, d));
      }
      weight_[op] = 1e6 * best;
    }
  }

  // Edges merged per op pair; transfer time from the mean latency and
  // seconds per byte over ordered pairs of distinct GPUs (of all devices
  // when there are fewer than two GPUs).
  void Pairs(const PlacementProblem& problem) {
    const Cluster& c = *problem.cluster;
    std::vector<DeviceId> devices = c.DevicesOfKind(DeviceKind::kGpu);
    if (devices.size() < 2) {
      devices.resize(c.num_devices());
      std::iota(devices.begin(), devices.end(), 0);
    }
    double latency = 0, per_byte = 0;
    int n = 0;
    for (DeviceId a : devices) {
      for (DeviceId b : devices) {
        if (a == b) continue;
        const double base = problem.cost->TransferTime(0, a, b);
        latency += base;
        per_byte +=
            (problem.cost->TransferTime(int64_t{1} << 30, a, b) - base) /
            static_cast<double>(int64_t{1} << 30);
        ++n;
      }
    }
    if (n > 0) {
      latency /= n;
      per_byte /= n;
    }
    std::vector<int32_t> pair_of(g_.num_ops(), -1);
    for (OpId i = 0; i < g_.num_ops(); ++i) {
      const size_t first = pairs_.size();
      for (EdgeId e : g_.out_edges(i)) {
        const OpId j = g_.edge_dst(e);
        if (pair_of[j] < 0 || pair_of[j] < static_cast<int32_t>(first)) {
          pair_of[j] = static_cast<int32_t>(pairs_.size());
          pairs_.push_back({i, j, 0.0});
        }
        Pair& p = pairs_[pair_of[j]];
        if (p.comm == 0) p.comm = 1e6 * latency;
        if (!g_.is_control(e)) {
          p.comm += 1e6 * per_byte *
                    static_cast<double>(g_.tensor_bytes(g_.edge_tensor(e)));
        }
      }
      for (size_t k = first; k < pairs_.size(); ++k) {
        Pair& p = pairs_[k];
        // Colocated ops share a device whatever the LP says.
        if (u_.unit[p.src] == u_.unit[p.dst]) p.comm = 0;
      }
    }
    out_pairs_.assign(g_.num_ops(), {});
    in_pairs_.assign(g_.num_ops(), {});
    for (size_t k = 0; k < pairs_.size(); ++k) {
      out_pairs_[pairs_[k].src].push_back(static_cast<int32_t>(k));
      in_pairs_[pairs_[k].dst].push_back(static_cast<int32_t>(k));
    }
  }

  // Weakly-connected pieces, each cut into runs of at most lp_max_ops ops in
  // topological order; windows of one piece come out in order.
  std::vector<std::vector<OpId>> Windows() const {
    std::vector<int32_t> parent(g_.num_ops());
    std::iota(parent.begin(), parent.end(), 0);
    auto find = [&](int32_t x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    for (const Pair& p : pairs_) parent[find(p.src)] = find(p.dst);
    std::vector<std::vector<OpId>> pieces(g_.num_ops());
    for (OpId op : g_.topological_order()) pieces[find(op)].push_back(op);
    std::vector<std::vector<OpId>> windows;
    const size_t limit = static_cast<size_t>(settings_.lp_max_ops);
    for (const std::vector<OpId>& piece : pieces) {
      for (size_t at = 0; at < piece.size(); at += limit) {
        windows.emplace_back(
            piece.begin() + at,
            piece.begin() + std::min(piece.size(), at + limit));
      }
    }
    return windows;
  }

  Status SolveWindow(int32_t w, const std::vector<OpId>& ops) {
    if (ops.size() == 1) {  // Nothing to choose; it starts after its inputs.
      start_[ops[0]] = EarliestFromEarlierWindows(ops[0]);
      return Status::Ok();
    }
    glp_prob* lp = glp_create_prob();
    Status status = BuildAndSolve(lp, w, ops);
    glp_delete_prob(lp);
    return status;
  }

  double EarliestFromEarlierWindows(OpId j) const {
    double lower = 0;
    for (int32_t k : in_pairs_[j]) {
      const Pair& p = pairs_[k];
      if (window_[p.src] != window_[j]) {
        lower = std::max(lower, start_[p.src] + weight_[p.src] + p.comm);
      }
    }
    return lower;
  }

  Status BuildAndSolve(glp_prob* lp, int32_t w, const std::vector<OpId>& ops) {
    // Columns: s for each op (1-based), then x for each inner pair, then w.
    std::vector<int32_t> column(g_.num_ops(), 0);
    const int num_ops = static_cast<int>(ops.size());
    std::vector<int32_t> inner;  // Pair ids inside the window.
    for (OpId op : ops) {
      for (int32_t k : out_pairs_[op]) {
        if (window_[pairs_[k].dst] == w) inner.push_back(k);
      }
    }
    const int makespan_col = num_ops + static_cast<int>(inner.size()) + 1;
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, makespan_col);
    const double epsilon = 1e-3 / num_ops;  // Starts as early as they can.
    for (int i = 0; i < num_ops; ++i) {
      column[ops[i]] = i + 1;
      glp_set_col_bnds(lp, i + 1, GLP_LO, EarliestFromEarlierWindows(ops[i]),
                       0.0);
      glp_set_obj_coef(lp, i + 1, epsilon);
    }
    std::vector<int32_t> x_column(pairs_.size(), 0);
    for (size_t n = 0; n < inner.size(); ++n) {
      const int col = num_ops + static_cast<int>(n) + 1;
      x_column[inner[n]] = col;
      glp_set_col_bnds(lp, col, GLP_DB, 0.0, 1.0);
    }
    glp_set_col_bnds(lp, makespan_col, GLP_LO, 0.0, 0.0);
    glp_set_obj_coef(lp, makespan_col, 1.0);

    std::vector<int> ia{0}, ja{0};
    std::vector<double> ar{0.0};
    int row = 0;
    auto add_row = [&](int type, double bound) {
      glp_add_rows(lp, 1);
      ++row;
      glp_set_row_bnds(lp, row, type, bound, bound);
    };
    auto add = [&](int col, double coef) {
      ia.push_back(row);
      ja.push_back(col);
      ar.push_back(coef);
    };
    // s_j - s_i - c_ij x_ij >= p_i.
    for (int32_t k : inner) {
      const Pair& p = pairs_[k];
      add_row(GLP_LO, weight_[p.src]);
      add(column[p.dst], 1.0);
      add(column[p.src], -1.0);
      if (p.comm > 0) add(x_column[k], -p.comm);
    }
    // Degree rows; pairs to other windows count as x = 1.
    for (int pass = 0; pass < 2; ++pass) {
      for (OpId op : ops) {
        const std::vector<int32_t>& mine =
            pass == 0 ? out_pairs_[op] : in_pairs_[op];
        int inside = 0;
        for (int32_t k : mine) inside += x_column[k] > 0;
        const double need = static_cast<double>(mine.size()) - 1 -
                            static_cast<double>(mine.size() - inside);
        if (need <= 0) continue;
        add_row(GLP_LO, need);
        for (int32_t k : mine) {
          if (x_column[k] > 0) add(x_column[k], 1.0);
        }
      }
    }
    // s_i - w <= -p_i for ops with no successor in the window.
    for (OpId op : ops) {
      bool last = true;
      for (int32_t k : out_pairs_[op]) last = last && x_column[k] == 0;
      if (!last) continue;
      add_row(GLP_UP, -weight_[op]);
      add(column[op], 1.0);
      add(makespan_col, -1.0);
    }
    glp_load_matrix(lp, static_cast<int>(ia.size()) - 1, ia.data(), ja.data(),
                    ar.data());

    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = GLP_ON;
    parm.meth = GLP_DUALP;
    parm.tm_lim = static_cast<int>(
        std::min(2e9, std::max(1.0, settings_.lp_time_limit * 1000)));
    const int code = glp_simplex(lp, &parm);
    if (code != 0) {
      return InternalError(
          "GLPK's simplex failed on the favourite-"
          "child LP (" +
          std::to_string(num_ops) + " ops, " + std::to_string(inner.size()) +
          " edges): glp_simplex returned " + std::to_string(code) +
          (code == GLP_ETMLIM ? " (time limit; lower "
                                "lp_max_ops or raise "
                                "lp_time_limit)"
                              : ""));
    }
    if (glp_get_status(lp) != GLP_OPT) {
      return InternalError(
          "the favourite-child LP has no optimal solution (GLPK "
          "status " +
          std::to_string(glp_get_status(lp)) + ")");
    }
    for (OpId op : ops) start_[op] = glp_get_col_prim(lp, column[op]);
    for (int32_t k : inner) {
      value_[k] = pairs_[k].comm > 0 ? glp_get_col_prim(lp, x_column[k]) : 1.0;
    }
    return Status::Ok();
  }

  // Favourite edges from the LP values, smallest first (heavier edges
  // first on ties), at most one child per parent and one parent per child.
  std::vector<OpId> Round() const {
    std::vector<int32_t> chosen;
    for (size_t k = 0; k < pairs_.size(); ++k) {
      if (value_[k] < settings_.threshold) {
        chosen.push_back(static_cast<int32_t>(k));
      }
    }
    std::sort(chosen.begin(), chosen.end(), [&](int32_t a, int32_t b) {
      if (value_[a] != value_[b]) return value_[a] < value_[b];
      if (pairs_[a].comm != pairs_[b].comm) {
        return pairs_[a].comm > pairs_[b].comm;
      }
      return a < b;
    });
    std::vector<OpId> favourite(g_.num_ops(), -1);
    std::vector<bool> has_parent(g_.num_ops(), false);
    for (int32_t k : chosen) {
      const Pair& p = pairs_[k];
      if (favourite[p.src] >= 0 || has_parent[p.dst]) continue;
      favourite[p.src] = p.dst;
      has_parent[p.dst] = true;
    }
    return favourite;
  }

  const Graph& g_;
  const baechi::PlacementUnits& u_;
  const SctSettings& settings_;
  std::vector<double> weight_;
  std::vector<Pair> pairs_;
  std::vector<std::vector<int32_t>> out_pairs_, in_pairs_;
  std::vector<int32_t> window_;
  std::vector<double> start_;
  std::vector<double> value_;  // LP value of each pair's x; 1 outside LPs.
};

class SctPlacer : public Placer {
 public:
  explicit SctPlacer(SctSettings settings)
      : Placer("m-sct"), settings_(settings) {}

  StatusOr<Placement> PlaceOps(const PlacementProblem& problem) override {
    DPLACE_ASSIGN_OR_RETURN(
        baechi::PlacementUnits units,
        baechi::MakePlacementUnits(problem, settings_.common,
                                   /*whole_step_estimate=*/false));
    FavouriteChildLp lp(problem, units, settings_);
    DPLACE_ASSIGN_OR_RETURN(std::vector<OpId> favourite, lp.Solve());
    DPLACE_ASSIGN_OR_RETURN(
        baechi::ListSchedule schedule,
        baechi::RunListScheduler(problem, units, settings_.common, favourite));
    return std::move(schedule.placement);
  }

 private:
  SctSettings settings_;
};

StatusOr<std::unique_ptr<Method>> MakeSct(const MethodOptions& options) {
  SctSettings settings;
  OptionReader reader("m-sct", options);
  baechi::ReadBaechiSettings(&reader, &settings.common);
  reader.Double("threshold", &settings.threshold);
  reader.Int("lp_max_ops", &settings.lp_max_ops);
  reader.Double("lp_time_limit", &settings.lp_time_limit);
  DPLACE_RETURN_IF_ERROR(reader.Finish());
  DPLACE_RETURN_IF_ERROR(
      baechi::ValidateBaechiSettings("m-sct", settings.common));
  if (!(settings.threshold > 0 && settings.threshold <= 1)) {
    return InvalidArgumentError("method m-sct: threshold must be in (0, 1]");
  }
  if (settings.lp_max_ops < 2) {
    return InvalidArgumentError("method m-sct: lp_max_ops must be >= 2");
  }
  if (!(settings.lp_time_limit > 0)) {
    return InvalidArgumentError("method m-sct: lp_time_limit must be > 0");
  }
  return std::unique_ptr<Method>(new SctPlacer(settings));
}

REGISTER_METHOD("m-sct", 32,
                "Baechi's memory-constrained small-communication-time "
                "scheduling: favourite children from an LP relaxation "
                "(GLPK); options threshold, lp_max_ops, lp_time_limit, "
                "colocate, use_cpu, memory_fraction",
                MakeSct);

}  // namespace
}  // namespace dplace
