#include "dplace/sim/queue_bound.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <utility>

#include "dplace/sim/device_classes.h"

namespace dplace {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Whether `from` is a strict ancestor of `to`, for a batch of such
// questions: asked first (Ask records them), then answered together, 64
// sources to a pass over the graph in topological order.
class Ancestry {
 public:
  explicit Ancestry(const Graph& graph) : graph_(graph) {}

  void Ask(OpId from, OpId to) { questions_.push_back(Key(from, to)); }

  void AnswerAll() {
    std::sort(questions_.begin(), questions_.end());
    questions_.erase(std::unique(questions_.begin(), questions_.end()),
                     questions_.end());
    answers_.assign(questions_.size(), false);
    const int n = graph_.num_ops();
    const std::vector<OpId>& order = graph_.topological_order();
    std::vector<int> position(n);
    for (int i = 0; i < n; ++i) position[order[i]] = i;
    std::vector<uint64_t> below(n, 0);  // Sources of the batch above.
    std::vector<int> bit(n, -1);
    size_t first = 0;  // The batch's first question.
    while (first < questions_.size()) {
      // Up to 64 sources, their questions from `first` to `last`.
      size_t last = first;
      int sources = 0, begin = n, end = 0;
      while (last < questions_.size()) {
        const OpId from = From(questions_[last]);
        if (bit[from] < 0) {
          if (sources == 64) break;
          bit[from] = sources++;
          begin = std::min(begin, position[from]);
        }
        end = std::max(end, position[To(questions_[last])] + 1);
        ++last;
      }
      // Only the ops between the first source and the last target.
      for (int i = begin; i < end; ++i) {
        const OpId v = order[i];
        uint64_t mask = 0;
        for (EdgeId e : graph_.in_edges(v)) {
          const OpId u = graph_.edge_src(e);
          if (position[u] < begin) continue;
          mask |= below[u];
          if (bit[u] >= 0) mask |= uint64_t{1} << bit[u];
        }
        below[v] = mask;
      }
      for (size_t q = first; q < last; ++q) {
        answers_[q] =
            (below[To(questions_[q])] >> bit[From(questions_[q])]) & 1;
      }
      for (size_t q = first; q < last; ++q) bit[From(questions_[q])] = -1;
      for (int i = begin; i < end; ++i) below[order[i]] = 0;
      first = last;
    }
  }

  bool Answer(OpId from, OpId to) const {
    const auto it =
        std::lower_bound(questions_.begin(), questions_.end(), Key(from, to));
    return it != questions_.end() && *it == Key(from, to) &&
           answers_[it - questions_.begin()];
  }

 private:
  static uint64_t Key(OpId from, OpId to) {
    return uint64_t{static_cast<uint32_t>(from)} << 32 |
           static_cast<uint32_t>(to);
  }
  static OpId From(uint64_t key) { return static_cast<OpId>(key >> 32); }
  static OpId To(uint64_t key) { return static_cast<OpId>(key & 0xffffffffu); }
  const Graph& graph_;
  std::vector<uint64_t> questions_;  // Sorted by source once answered.
  std::vector<bool> answers_;
};

bool HasControlInput(const Graph& graph, OpId op) {
  for (EdgeId e : graph.in_edges(op)) {
    if (graph.is_control(e)) return true;
  }
  return false;
}

bool Reads(const Graph& graph, OpId op, TensorId t) {
  for (EdgeId e : graph.in_edges(op)) {
    if (graph.edge_tensor(e) == t) return true;
  }
  return false;
}

// Ops of one group that tensor `t` makes ready together: `a` and the
// siblings that read it too.
struct Siblings {
  OpId a;
  TensorId t;
  std::vector<OpId> siblings;
};

// Whether every input of `op` but `t` is on the group's device before `t`
// arrives there, whatever the placement that keeps the group whole: its
// producer is in the group and is t's producer or an ancestor of it, or
// an op of the group that is an ancestor of t's producer reads it too (it
// reached the device before that op ran, and stays cached there).
// `ancestor(from, to)`: from is a strict ancestor of to.
bool InputsBefore(const Graph& graph, const std::vector<int32_t>& group_of,
                  const std::vector<std::vector<OpId>>& members, OpId op,
                  TensorId t, const std::function<bool(OpId, OpId)>& ancestor) {
  const int32_t group = group_of[op];
  const OpId pt = graph.producer(t);
  bool all = true;  // Every input is looked at: asking records each.
  for (EdgeId e : graph.in_edges(op)) {
    const TensorId u = graph.edge_tensor(e);
    if (u == t) continue;
    const OpId pu = graph.producer(u);
    bool before = group_of[pu] == group && (pu == pt || ancestor(pu, pt));
    for (OpId f : members[group]) {
      if (before) break;
      before = f != op && Reads(graph, f, u) && ancestor(f, pt);
    }
    all = all && before;
  }
  return all;
}

}  // namespace

std::vector<double> GroupQueueHeads(const CostModel& cost,
                                    const std::vector<int32_t>& group_of) {
  const Graph& graph = cost.graph();
  const Cluster& cluster = cost.cluster();
  const int n = graph.num_ops();
  int num_groups = 0;
  for (int32_t g : group_of) num_groups = std::max(num_groups, g + 1);
  std::vector<std::vector<OpId>> members(num_groups);
  for (OpId op = 0; op < n; ++op) members[group_of[op]].push_back(op);

  std::vector<Siblings> found;
  for (OpId a = 0; a < n; ++a) {
    const std::vector<OpId>& group = members[group_of[a]];
    if (group.size() < 2 || HasControlInput(graph, a)) continue;
    std::vector<TensorId> seen;
    for (EdgeId e : graph.in_edges(a)) {
      const TensorId t = graph.edge_tensor(e);
      if (std::find(seen.begin(), seen.end(), t) != seen.end()) continue;
      seen.push_back(t);
      Siblings s{a, t, {}};
      for (OpId b : group) {
        if (b != a && !HasControlInput(graph, b) && Reads(graph, b, t)) {
          s.siblings.push_back(b);
        }
      }
      if (!s.siblings.empty()) found.push_back(std::move(s));
    }
  }

  // Which inputs are there before t: asked for every candidate, answered
  // in one batch, then read.
  Ancestry ancestry(graph);
  const auto ask = [&ancestry](OpId from, OpId to) {
    ancestry.Ask(from, to);
    return false;  // Asks about every witness.
  };
  for (const Siblings& s : found) {
    InputsBefore(graph, group_of, members, s.a, s.t, ask);
    for (OpId b : s.siblings) {
      InputsBefore(graph, group_of, members, b, s.t, ask);
    }
  }
  ancestry.AnswerAll();
  const auto answer = [&ancestry](OpId from, OpId to) {
    return ancestry.Answer(from, to);
  };

  // Per op and class of one compute slot: the siblings' time on it, the
  // largest over the tensors that make the op ready (its other inputs
  // there before them, so the op's start bounds the tensor's arrival).
  const DeviceClasses classes = ClassesOf(cost);
  const int k = classes.num();
  std::vector<double> queued(static_cast<size_t>(n) * k, 0);
  std::vector<bool> has_siblings(n, false);
  // The others: the op may wait for another input after the tensor came,
  // so only the tensor's producer bounds its arrival. Per op, its
  // tensors' producers and their siblings' time per class.
  struct Late {
    OpId producer;
    std::vector<double> queued;  // Per class.
  };
  std::vector<std::vector<Late>> late(n);
  for (const Siblings& s : found) {
    const bool last = InputsBefore(graph, group_of, members, s.a, s.t, answer);
    std::vector<double> sums(k, 0);
    bool any = false;
    for (int c = 0; c < k; ++c) {
      const DeviceId d = classes.representative(c);
      if (cluster.device(d).compute_slots != 1) continue;
      for (OpId b : s.siblings) {
        const double t = cost.OpTime(b, d);
        if (t < kInfinity &&
            InputsBefore(graph, group_of, members, b, s.t, answer)) {
          sums[c] += t;
        }
      }
      any = any || sums[c] > 0;
    }
    if (!any) continue;
    if (last) {
      for (int c = 0; c < k; ++c) {
        double& q = queued[static_cast<size_t>(s.a) * k + c];
        q = std::max(q, sums[c]);
      }
      has_siblings[s.a] = true;
    } else {
      late[s.a].push_back({graph.producer(s.t), std::move(sums)});
    }
  }

  const ClassTransfers transfers(cost, classes);
  // The least hop of `bytes` off a device of class c.
  const auto hop = [&](int c, int64_t bytes) {
    double least = kInfinity;
    for (int to = 0; to < k; ++to) {
      least = std::min(least, transfers.Seconds(c, to, false, bytes));
    }
    return least;
  };
  std::vector<double> start(n, 0);
  for (OpId a : graph.topological_order()) {
    const double fastest = cost.FastestOpTime(a);
    for (EdgeId e : graph.out_edges(a)) {
      const OpId c = graph.edge_dst(e);
      double w = start[a] + fastest;
      if ((has_siblings[a] || !late[a].empty()) && !graph.is_control(e)) {
        // The group on each class: a's time there, and the siblings ahead
        // of c on a one-slot device, or c elsewhere after a hop; after a's
        // start, or after the arrival of a tensor a may wait past.
        const int64_t bytes = graph.tensor_bytes(graph.edge_tensor(e));
        const auto ahead = [&](int cls, double siblings) {
          if (siblings > 0 && group_of[c] != group_of[a]) {
            return std::min(siblings, hop(cls, bytes));
          }
          return siblings;
        };
        w = kInfinity;
        for (int cls = 0; cls < k; ++cls) {
          const double ta = cost.OpTime(a, classes.representative(cls));
          if (ta == kInfinity) continue;
          double here = start[a] + ta;
          if (ta > 0) {
            here += ahead(cls, queued[static_cast<size_t>(a) * k + cls]);
            for (const Late& l : late[a]) {
              here = std::max(here, start[l.producer] +
                                        cost.FastestOpTime(l.producer) + ta +
                                        ahead(cls, l.queued[cls]));
            }
          }
          w = std::min(w, here);
        }
      }
      start[c] = std::max(start[c], w);
    }
  }
  return start;
}

double LatestEnd(const CostModel& cost, const std::vector<double>& heads) {
  double path = 0;
  for (OpId v = 0; v < cost.graph().num_ops(); ++v) {
    path = std::max(path, heads[v] + cost.FastestOpTime(v));
  }
  return path;
}

double GroupQueuePathBound(const CostModel& cost,
                           const std::vector<int32_t>& group_of) {
  return LatestEnd(cost, GroupQueueHeads(cost, group_of));
}

}  // namespace dplace
