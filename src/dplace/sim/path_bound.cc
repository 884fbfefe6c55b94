#include "dplace/sim/path_bound.h"

#include <glpk.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dplace/graph/placement.h"
#include "dplace/sim/device_classes.h"
#include "dplace/sim/dominators.h"
#include "dplace/sim/region_inputs.h"
#include "dplace/sim/step_function.h"

namespace dplace {
namespace {

using sim_detail::At;
using sim_detail::Combine;
using sim_detail::CombineOnW;
using sim_detail::Front;
using sim_detail::ImmediateDominators;
using sim_detail::kInfinity;
using sim_detail::Max;
using sim_detail::Min;
using sim_detail::MinWith;
using sim_detail::OwnSource;
using sim_detail::Point;
using sim_detail::Projected;
using sim_detail::Prune;
using sim_detail::RegionAncestors;
using sim_detail::RegionInput;
using sim_detail::Restricted;
using sim_detail::RoundDown;
using sim_detail::Shifted;
using sim_detail::Smallest;
using sim_detail::Step;
using sim_detail::StepFn;
using sim_detail::Thin;
// Memory of a class that never binds (more than the graph's persistent
// bytes): far from int64's end, so shifts cannot overflow.
constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max() / 4;

// The memory a run on each class may hold: the devices' capacity, or
// kUnlimited where a device holds every persistent byte and the largest
// op's outputs at once (memory never binds there).
std::vector<int64_t> RunCapacities(const CostModel& cost,
                                   const DeviceClasses& classes) {
  const Graph& g = cost.graph();
  const int64_t persistent = g.total_persistent_bytes();
  int64_t largest_op = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    int64_t bytes = g.temporary_bytes(op);
    for (int i = 0; i < g.num_outputs(op); ++i) {
      bytes += g.tensor_bytes(g.output(op, i));
    }
    largest_op = std::max(largest_op, bytes);
  }
  std::vector<int64_t> capacity;
  for (int c = 0; c < classes.num(); ++c) {
    const int64_t memory =
        cost.cluster().device(classes.representative(c)).memory_bytes;
    capacity.push_back(memory - largest_op >= persistent ? kUnlimited : memory);
  }
  return capacity;
}

// The bound's state and its two ways of computing an op's functions: from
// its inputs' (each input free to choose its device), and, at an op where
// paths meet, again from the op w that dominates it, with every op between
// them knowing whether it shares w's device (so the paths agree on w).
class PathBound {
 public:
  PathBound(const CostModel& cost, const PathBoundOptions& options)
      : cost_(cost),
        g_(cost.graph()),
        options_(options),
        classes_(ClassesOf(cost)),
        capacity_(RunCapacities(cost, classes_)),
        nc_(classes_.num()) {
    const ClassTransfers table(cost, classes_);
    transfer_.resize(static_cast<size_t>(g_.num_edges()) * nc_ * nc_);
    for (EdgeId e = 0; e < g_.num_edges(); ++e) {
      const bool control = g_.is_control(e);
      const int64_t bytes = control ? 0 : g_.tensor_bytes(g_.edge_tensor(e));
      for (int a = 0; a < nc_; ++a) {
        for (int b = 0; b < nc_; ++b) {
          transfer_[(static_cast<size_t>(e) * nc_ + a) * nc_ + b] =
              table.Seconds(a, b, control, bytes);
        }
      }
    }
    for (int c = 0; c < nc_; ++c) memory_binds_ |= capacity_[c] != kUnlimited;
    if (options_.whole_groups) group_ = ColocationHintGroups(g_).group;
    if (options_.link_queues && memory_binds_) KeepLinks();
  }

  // What Behind and the cut floors read. exit_link_ and single_exit_:
  // each device's one outgoing link, a FIFO channel, and whether every
  // device of a class has one; entry_link_ and single_entry_ likewise for
  // the one incoming link. routes_: per class pair, the routes between two
  // distinct devices of them, one per sequence of hop figures (eight GPUs
  // behind one host have one), or none when a route has a hop its destination
  // copies (not a FIFO channel).
  void KeepLinks() {
    const Cluster& cluster = cost_.cluster();
    exit_link_.assign(cluster.num_devices(), -1);
    entry_link_.assign(cluster.num_devices(), -1);
    std::vector<int> out_links(cluster.num_devices(), 0);
    std::vector<int> in_links(cluster.num_devices(), 0);
    for (LinkId l = 0; l < cluster.num_links(); ++l) {
      const Link& link = cluster.link(l);
      ++out_links[link.from];
      ++in_links[link.to];
      if (link.copier == Copier::kLink) {
        exit_link_[link.from] = l;
        entry_link_[link.to] = l;
      }
    }
    for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
      if (out_links[d] != 1) exit_link_[d] = -1;
      if (in_links[d] != 1) entry_link_[d] = -1;
    }
    for (int c = 0; c < nc_; ++c) {
      bool single = true, single_in = true;
      for (DeviceId d : classes_.members[c]) {
        single &= exit_link_[d] >= 0;
        single_in &= entry_link_[d] >= 0;
      }
      single_exit_.push_back(single);
      single_entry_.push_back(single_in);
    }
    // NextHops: per class, the classes of its exit links' far ends and the
    // links into each class.
    std::vector<int> class_of(cluster.num_devices());
    for (int c = 0; c < nc_; ++c) {
      for (DeviceId d : classes_.members[c]) class_of[d] = c;
    }
    far_end_.assign(static_cast<size_t>(nc_) * nc_, 0);
    for (int c = 0; c < nc_; ++c) {
      for (DeviceId d : classes_.members[c]) {
        if (exit_link_[d] >= 0) {
          far_end_[c * nc_ + class_of[cluster.link(exit_link_[d]).to]] = 1;
        }
      }
    }
    links_into_.resize(nc_);
    for (LinkId l = 0; l < cluster.num_links(); ++l) {
      links_into_[class_of[cluster.link(l).to]].push_back(l);
    }
    routes_.resize(static_cast<size_t>(nc_) * nc_);
    for (int a = 0; a < nc_; ++a) {
      for (int b = 0; b < nc_; ++b) {
        std::vector<std::vector<LinkId>>& kept = routes_[a * nc_ + b];
        bool serial = true;
        for (DeviceId from : classes_.members[a]) {
          for (DeviceId to : classes_.members[b]) {
            if (from == to) continue;
            const Route route = cluster.route(from, to);
            std::vector<LinkId> links(route.begin(), route.end());
            for (LinkId l : links) {
              serial &= cluster.link(l).copier == Copier::kLink;
            }
            auto alike = [&](const std::vector<LinkId>& other) {
              if (other.size() != links.size()) return false;
              for (size_t i = 0; i < links.size(); ++i) {
                const Link& x = cluster.link(links[i]);
                const Link& y = cluster.link(other[i]);
                if (x.latency != y.latency || x.bandwidth != y.bandwidth) {
                  return false;
                }
              }
              return true;
            };
            if (std::none_of(kept.begin(), kept.end(), alike)) {
              kept.push_back(std::move(links));
            }
          }
        }
        if (!serial) kept.clear();
      }
    }
  }

  // Keep every op's functions after Run, for Guide.
  void KeepFunctions() { keep_ = true; }

  // A placement read off the bound (after Run with KeepFunctions): from
  // the outputs back, each op takes the device class and run memory its
  // most critical consumer asked for, and shares that consumer's device
  // when the bound had it do so; the groups of ops that share a device
  // then fill the devices of their class in topological order while
  // memory lasts (the rest go where they fit best).
  Placement Guide() const;

  double Run() {
    const int n = g_.num_ops();
    f_.assign(static_cast<size_t>(n) * nc_, {});
    smallest_.assign(static_cast<size_t>(n) * nc_, kInfinity);
    std::vector<int32_t> depth;
    const std::vector<OpId> idom = ImmediateDominators(g_, &depth);
    std::vector<int32_t> readers_left(n, 0);
    for (EdgeId e = 0; e < g_.num_edges(); ++e) ++readers_left[g_.edge_src(e)];
    std::vector<char> meets(n, 0);
    for (OpId v = 0; v < n; ++v) {
      meets[v] = memory_binds_ && idom[v] >= 0 && DistinctInputs(v) > 1;
      if (meets[v]) ++readers_left[idom[v]];  // Read again at v.
    }
    double bound = 0;
    int64_t region_budget = options_.max_region_ops;
    for (OpId v : g_.topological_order()) {
      FromInputs(v);
      if (meets[v]) {
        std::vector<OpId> region;
        if (Region(v, idom[v], &region_budget, &region))
          Pinned(v, idom[v], region);
        Release(idom[v], &readers_left);
      }
      double best = kInfinity;
      for (int c = 0; c < nc_; ++c) best = std::min(best, smallest_[Key(v, c)]);
      bound = std::max(bound, best);
      for (EdgeId e : g_.in_edges(v)) Release(g_.edge_src(e), &readers_left);
    }
    return bound;
  }

 private:
  size_t Key(OpId v, int c) const { return static_cast<size_t>(v) * nc_ + c; }
  double Transfer(EdgeId e, int from, int to) const {
    return transfer_[(static_cast<size_t>(e) * nc_ + from) * nc_ + to];
  }
  double Time(OpId v, int c) const {
    return cost_.OpTime(v, classes_.representative(c));
  }
  // The most persistent bytes v's run may hold on class c: the capacity
  // less v's outputs and temporary bytes.
  int64_t Limit(OpId v, int c) const {
    if (capacity_[c] == kUnlimited) return kUnlimited;
    int64_t extra = g_.temporary_bytes(v);
    for (int i = 0; i < g_.num_outputs(v); ++i) {
      extra += g_.tensor_bytes(g_.output(v, i));
    }
    return capacity_[c] - extra;
  }
  // Whether a tensor from u to v never moves: both ops in one colocation
  // group, with options_.whole_groups.
  bool Together(OpId u, OpId v) const {
    return !group_.empty() && group_[u] == group_[v];
  }
  int DistinctInputs(OpId v) const {
    std::vector<OpId> inputs;
    for (EdgeId e : g_.in_edges(v)) {
      if (!OwnSource(g_, g_.edge_src(e))) inputs.push_back(g_.edge_src(e));
    }
    std::sort(inputs.begin(), inputs.end());
    return static_cast<int>(std::unique(inputs.begin(), inputs.end()) -
                            inputs.begin());
  }
  void Release(OpId u, std::vector<int32_t>* readers_left) {
    if (keep_ || --(*readers_left)[u] > 0) return;
    for (int c = 0; c < nc_; ++c) StepFn().swap(f_[Key(u, c)]);
  }

  // v's function on class c from what its inputs need: the largest, over
  // inputs, of the input's function on v's device (memory shifted by v's
  // persistent bytes) or, on another device, its best plus the transfer.
  StepFn Finish(OpId v, int c, const StepFn& need) const {
    StepFn result = Restricted(need, g_.persistent_bytes(v), Limit(v, c));
    for (Step& step : result) step.g += Time(v, c);
    RoundDown(&result, options_.max_steps);
    return result;
  }
  bool Placeable(OpId v, int c) const {
    return Time(v, c) < kInfinity && g_.persistent_bytes(v) <= Limit(v, c);
  }

  void FromInputs(OpId v) {
    const int64_t s = g_.persistent_bytes(v);
    for (int c = 0; c < nc_; ++c) {
      if (!Placeable(v, c)) continue;
      StepFn need{{0, 0}};
      for (EdgeId e : g_.in_edges(v)) {
        const OpId u = g_.edge_src(e);
        double moved = kInfinity;
        for (int from = 0; from < nc_ && !Together(u, v); ++from) {
          moved =
              std::min(moved, smallest_[Key(u, from)] + Transfer(e, from, c));
        }
        need =
            Max(need, MinWith(Shifted(f_[Key(u, c)], s, Limit(v, c)), moved));
        if (need.empty()) break;
      }
      f_[Key(v, c)] = Finish(v, c, need);
      smallest_[Key(v, c)] = Smallest(f_[Key(v, c)]);
    }
  }

  // The ops between w and v (those v reaches backwards without crossing w),
  // in topological order, v last; false when they exceed the budget.
  bool Region(OpId v, OpId w, int64_t* budget, std::vector<OpId>* region) {
    std::vector<OpId> stack{v};
    seen_.resize(g_.num_ops(), 0);
    region->clear();
    seen_[v] = 1;
    while (!stack.empty()) {
      const OpId u = stack.back();
      stack.pop_back();
      region->push_back(u);
      for (EdgeId e : g_.in_edges(u)) {
        const OpId a = g_.edge_src(e);
        if (a == w || seen_[a]) continue;
        seen_[a] = 1;
        stack.push_back(a);
      }
    }
    for (OpId u : *region) seen_[u] = 0;
    *budget -= static_cast<int64_t>(region->size());
    if (*budget < 0) return false;
    if (position_.empty()) {
      position_.resize(g_.num_ops());
      for (size_t i = 0; i < g_.topological_order().size(); ++i) {
        position_[g_.topological_order()[i]] = static_cast<int32_t>(i);
      }
    }
    std::sort(region->begin(), region->end(),
              [&](OpId a, OpId b) { return position_[a] < position_[b]; });
    return true;
  }

  // v's functions again, with the ops of `region` (v last) each knowing
  // whether it is on w's device (flag 1) for every class of w; the larger
  // of these and FromInputs' is kept, both being bounds. Where v reads a
  // tensor of w and sits on another device, that tensor is the first to
  // leave w's device after w (Behind).
  void Pinned(OpId v, OpId w, const std::vector<OpId>& region) {
    Pass pass;
    for (size_t i = 0; i < region.size(); ++i)
      pass.index[region[i]] = static_cast<int>(i);
    pass.ancestors = RegionAncestors(region, pass.index, g_);
    const size_t slots = region.size() * nc_ * 3;
    pass.cond.resize(slots);
    pass.best.resize(slots);
    pass.front.resize(region.size());
    EdgeId skip = -1;
    for (EdgeId e : g_.in_edges(v)) {
      if (options_.link_queues && g_.edge_src(e) == w && !g_.is_control(e) &&
          !Together(w, v)) {
        skip = e;
        break;
      }
    }
    std::vector<StepFn> pinned(nc_);  // v's, min over w's class.
    pass.entry.clear();
    for (int c = 0; c < nc_ && options_.link_queues; ++c) {
      pass.entry.push_back(EntryFloors(w, region, pass.index, c));
    }
    const int last = static_cast<int>(region.size()) - 1;
    for (int cw = 0; cw < nc_; ++cw) {
      if (f_[Key(w, cw)].empty()) continue;
      ExitFloors(w, region, cw, &pass);
      pass.next_hop = NextHops(w, region, cw);
      pass.busy.assign(region.size(), 0);
      pass.bytes.assign(region.size(), 0);
      for (size_t i = 0; i < region.size(); ++i) {
        if (!g_.in_edges(region[i]).empty()) pass.busy[i] = Time(region[i], cw);
        pass.bytes[i] = g_.persistent_bytes(region[i]);
      }
      // Per step of w's function: w's run holds exactly least_w bytes and
      // w finishes at the step's value.
      for (const Step& pin : f_[Key(w, cw)]) {
        pass.w = w;
        pass.cw = cw;
        pass.pin = pin;
        pass.cv = -1;
        pass.skip = -1;
        RegionPass(region, &pass);
        std::vector<StepFn> apart(nc_);
        for (int c = 0; c < nc_; ++c) {
          pinned[c] = Min(pinned[c], pass.cond[pass.Key(last, c, 1, nc_)]);
          apart[c] = pass.cond[pass.Key(last, c, 0, nc_)];
        }
        // v apart from w: v's device is a second pinned one (flag 2).
        for (int cv = 0; cv < nc_ && skip >= 0; ++cv) {
          if (apart[cv].empty()) continue;
          pass.cv = cv;
          pass.skip = skip;
          RegionPass(region, &pass);
          apart[cv] = Max(apart[cv], pass.cond[pass.Key(last, cv, 2, nc_)]);
        }
        for (int c = 0; c < nc_; ++c) pinned[c] = Min(pinned[c], apart[c]);
      }
    }
    for (int c = 0; c < nc_; ++c) {
      StepFn& at_v = f_[Key(v, c)];
      at_v = Max(at_v, pinned[c]);
      RoundDown(&at_v, options_.max_steps);
      smallest_[Key(v, c)] = Smallest(at_v);
    }
  }

  // One computation over a region: its dominator w pinned (class cw, run
  // memory and finish from `pin`), each op of the region on w's device
  // (flag 1) or not (flag 0); with cv >= 0, also on the device of the
  // region's last op v (flag 2, class cv), which reads w's tensor by edge
  // `skip`, and flag 0 is then a third device.
  struct Pass {
    std::unordered_map<OpId, int> index;
    std::vector<std::vector<uint64_t>> ancestors;
    OpId w = -1;
    int cw = 0;
    Step pin{0, 0};
    int cv = -1;
    EdgeId skip = -1;
    std::vector<double> cut;       // Per op, apart from w: ExitFloors.
    std::vector<double> next_hop;  // Per class: NextHops.
    std::vector<StepFn> cond;      // Per op, class, flag.
    std::vector<double> best;      // Their smallest values.
    std::vector<Front> front;      // Per op on w's device: with busy.
    // Per class, then op, apart from w: EntryFloors.
    std::vector<std::vector<double>> entry;
    // Per op: ExitFloors' excursions; and the least first hop of w's
    // tensors.
    std::vector<double> own;
    double w_hop = 0;
    // Per op, on w's class: its time (none for a weight), its bytes.
    std::vector<double> busy;
    std::vector<int64_t> bytes;
    static size_t Key(int i, int c, int flag, int nc) {
      return (static_cast<size_t>(i) * nc + c) * 3 + flag;
    }
  };
  void RegionPass(const std::vector<OpId>& region, Pass* pass) const {
    const int flags = pass->cv >= 0 ? 3 : 2;
    const int cw = pass->cw, cv = pass->cv;
    const Step pin = pass->pin;
    const StepFn at_w{pin};
    const Front at_w_front{{pin.m, pin.g, 0}};
    // The ops on w's device run one at a time per compute slot.
    const double slots =
        cost_.cluster().device(classes_.representative(cw)).compute_slots;
    auto key = [&](int i, int c, int flag) {
      return Pass::Key(i, c, flag, nc_);
    };
    // The class an op of each flag must have (-1: any).
    auto class_of = [&](int flag) {
      return flag == 1 ? cw : flag == 2 ? cv : -1;
    };
    std::vector<RegionInput> inputs;
    for (size_t i = 0; i < region.size(); ++i) {
      const OpId u = region[i];
      const int64_t s = g_.persistent_bytes(u);
      for (int c = 0; c < nc_; ++c) {
        for (int flag = 0; flag < flags; ++flag) {
          StepFn& out = pass->cond[key(i, c, flag)];
          out.clear();
          pass->best[key(i, c, flag)] = kInfinity;
          if (flag == 1 && c == cw) pass->front[i].clear();
          if ((class_of(flag) >= 0 && c != class_of(flag)) ||
              !Placeable(u, c)) {
            continue;
          }
          // The region's last op is on its own device when it is pinned.
          if (cv >= 0 && i + 1 == region.size() && flag != 2) continue;
          // Back on w's device, u's run shares it with w's: at least the
          // least w's run holds.
          const int64_t from = flag == 1 ? pin.m + s : 0;
          // Per input op: its function on u's device, and its best
          // arrival from another device (the latest of its tensors).
          inputs.clear();
          for (EdgeId e : g_.in_edges(u)) {
            const OpId a = g_.edge_src(e);
            static const StepFn kNowhere;
            const StepFn* same = &kNowhere;
            static const Front kNowhereFront;
            const Front* front = &kNowhereFront;
            double moved = kInfinity;
            double own = 0;
            if (a == pass->w) {
              if (flag == 1) {
                same = &at_w;
                front = &at_w_front;
              }
              if (flag != 1 && !Together(a, u)) {
                moved = pin.g + Transfer(e, cw, c);
              }
            } else {
              const int j = pass->index.at(a);
              same = &pass->cond[key(j, c, flag)];
              if (flag == 1) {
                front = &pass->front[j];
                own = pass->own[j];
              }
              for (int c2 = 0; c2 < nc_ && !Together(a, u); ++c2) {
                for (int f2 = 0; f2 < flags; ++f2) {
                  // a on u's device (w's or v's): not another device.
                  if ((f2 == flag && flag != 0) ||
                      (class_of(f2) >= 0 && c2 != class_of(f2))) {
                    continue;
                  }
                  const double ready = pass->best[key(j, c2, f2)];
                  double arrival = ready + Transfer(e, c2, c);
                  if (f2 == 1 && cv >= 0 && !g_.is_control(e)) {
                    arrival = std::max(
                        arrival,
                        Behind(pass->skip, e, cw, c, flag == 2, ready, pin.g));
                  }
                  moved = std::min(moved, arrival);
                }
              }
            }
            bool merged = false;
            for (RegionInput& in : inputs) {
              if (in.op != a) continue;
              in.moved = std::max(in.moved, moved);
              merged = true;
            }
            if (!merged) inputs.push_back({a, same, moved, front, own});
          }
          if (flag == 1 && options_.serial_devices) {
            // On w's device: u starts after its inputs and after the ops
            // of the region before it on that device, which all start
            // after w (but a source of the region, a weight, may run
            // before w: it adds no busy time).
            const double t = Time(u, c);
            const bool after_w = !g_.in_edges(u).empty();
            Front f = CombineOnW(inputs, pin.m, pass->w, pass->ancestors,
                                 pass->index, pass->busy, pass->bytes,
                                 options_.max_steps, 1 / slots);
            Front kept;
            for (Point p : f) {
              p.m = std::max(p.m + s, from);
              if (p.m > Limit(u, c)) continue;
              if (after_w) {
                p.g = std::max(p.g + t, pin.g + (p.b + t) / slots);
                if (p.x > 0) {  // Out on w's one link, then back.
                  p.g = std::max(p.g, pin.g + std::min(p.x, pass->w_hop) +
                                          pass->next_hop[cw] + t);
                }
                p.b += t;
              } else {
                p.g += t;
              }
              kept.push_back(p);
            }
            Prune(&kept);
            Thin(&kept, options_.max_steps, 1 / slots);
            out = Projected(kept);
            pass->front[i].swap(kept);
            pass->best[key(i, c, flag)] = Smallest(out);
            continue;
          }
          StepFn need =
              Combine(inputs, flag == 1 ? pin.m : 0, pass->w, pass->ancestors,
                      pass->index, options_.max_steps);
          if (flag != 1 && pass->cut[i] > 0) {
            need = Max(need,
                       StepFn{{0, pin.g + pass->cut[i] + pass->next_hop[c]}});
          }
          if (flag != 1 && !pass->entry.empty() && pass->entry[c][i] > 0) {
            need = Max(need, StepFn{{0, pin.g + pass->entry[c][i]}});
          }
          need = Restricted(Shifted(need, s, Limit(u, c)), from, Limit(u, c));
          out = Finish(u, c, need);
          pass->best[key(i, c, flag)] = Smallest(out);
        }
      }
    }
  }

  // The earliest arrival of tensor e, ready at `ready` on w's device (class
  // cw), on a device of class c, when w's tensor `skip` left w's device at
  // `w_finish` for another device, v's (to_v: e goes to v's device too).
  // Each directed link is a FIFO channel and a transfer is queued when its
  // tensor is ready, so e, ready after w, queues behind skip: on the same
  // route (to v's device) at every hop; elsewhere on the first hop, where
  // every device of cw has one outgoing link. 0 where neither holds.
  double Behind(EdgeId skip, EdgeId e, int cw, int c, bool to_v, double ready,
                double w_finish) const {
    const int64_t skip_bytes = g_.tensor_bytes(g_.edge_tensor(skip));
    const int64_t bytes = g_.tensor_bytes(g_.edge_tensor(e));
    if (!to_v) {
      if (!single_exit_[cw]) return 0;
      double first = kInfinity;  // skip's first hop, the least over cw.
      for (DeviceId d : classes_.members[cw]) {
        first = std::min(first, cost_.LinkTime(skip_bytes, exit_link_[d]));
      }
      return std::max(ready, w_finish + first) + Transfer(e, cw, c);
    }
    if (routes_.empty()) return 0;
    const std::vector<std::vector<LinkId>>& routes = routes_[cw * nc_ + c];
    if (routes.empty()) return 0;
    double arrival = kInfinity;  // The least over the routes.
    for (const std::vector<LinkId>& route : routes) {
      double skip_end = w_finish, end = ready;
      for (LinkId l : route) {
        skip_end += cost_.LinkTime(skip_bytes, l);
        end = std::max(end, skip_end) + cost_.LinkTime(bytes, l);
      }
      arrival = std::min(arrival, end);
    }
    return arrival;
  }

  // Per op u of the region, on a device of class c that is not w's and has
  // one incoming link: how long after w finishes u can start. The mirror
  // of ExitFloors' cut: every path from w to u enters u's device for the last
  // time by a tensor of an op after w (or w's), so those tensors form a
  // cut between w and u, and the one link into u's device carries them one
  // after another from w's finish on, before u can start. Each tensor
  // weighs its hop into a device of class c. Zeros where the class has
  // several incoming links.
  std::vector<double> EntryFloors(OpId w, const std::vector<OpId>& region,
                                  const std::unordered_map<OpId, int>& index,
                                  int c) const {
    return LeastCuts(w, region, index, single_entry_, entry_link_, c);
  }

  // Per op u of the region: how long after w finishes u can start on
  // another device than w's, where that device has one outgoing link (a
  // FIFO channel): every path from w to u leaves w's device somewhere, by
  // a tensor of an op there (w or an op after it) sent on that one link,
  // so the tensors that first leave it form a cut between w and u, and the
  // link carries them one after another from w's finish on; u reads each
  // after it crossed. The least such cut is a maximum flow (GLPK's
  // Ford-Fulkerson), each tensor weighing its first hop out of a device of
  // class cw, rounded down to 0.1 us; control edges carry no tensor and
  // are left out; zeros where the class has several outgoing links. That
  // is pass->cut. With options_.excursions, the same network also gives
  // pass->own and pass->w_hop: per op u of the region on w's device (of class
  // cw, with one outgoing link) and reading an op a elsewhere: how long w's
  // link is busy with the tensors that leave it on the way to a (they cross it
  // after w finishes, one after another, and one of a's results comes back
  // before u starts). At least the least cut between w and a; where two inputs'
  // branches share no op, their cuts share no tensor but w's, so each
  // cut's w tensors count at the least hop of one (`w_hop`, set here) and
  // each floor is capped at w_hop: then the floors of disjoint branches
  // add up and the least of their sum and w_hop still holds (either some
  // cut leaves by a tensor of w, or they are all disjoint).
  void ExitFloors(OpId w, const std::vector<OpId>& region, int cw,
                  Pass* pass) const {
    const bool excursions = options_.link_queues && options_.excursions;
    pass->own.clear();
    pass->w_hop = 0;
    pass->cut = LeastCuts(w, region, pass->index, single_exit_, exit_link_, cw,
                          excursions ? &pass->own : nullptr, &pass->w_hop);
    pass->own.resize(region.size(), 0);
    for (double& floor : pass->own) floor = std::min(floor, pass->w_hop);
  }

  // Per op of the region: the least cut between w and it, each tensor
  // weighing its time on the least of `link` over the devices of class c;
  // zeros unless every such device has one (`single`). With at_least_w,
  // the cuts again with each of w's tensors weighing the least of theirs,
  // which w_hop is set to.
  std::vector<double> LeastCuts(OpId w, const std::vector<OpId>& region,
                                const std::unordered_map<OpId, int>& index,
                                const std::vector<char>& single,
                                const std::vector<LinkId>& link, int c,
                                std::vector<double>* at_least_w = nullptr,
                                double* w_hop = nullptr) const {
    std::vector<double> floors(region.size(), 0);
    if (single.empty() || !single[c]) return floors;
    constexpr double kUnitsPerSecond = 1e7;
    constexpr double kMostUnits = 1 << 24;  // A tensor's; sums fit an int.
    constexpr double kThrough = 1 << 30;    // An op's arcs: never cut.
    glp_graph* net = glp_create_graph(0, sizeof(double));
    // Vertex 1: w; 2 + i: region[i]; then each tensor's in and out.
    glp_add_vertices(net, static_cast<int>(region.size()) + 1);
    auto arc = [&](int from, int to, double units) {
      glp_arc* a = glp_add_arc(net, from, to);
      std::memcpy(a->data, &units, sizeof(double));
      return a;
    };
    auto vertex = [&](OpId op) { return op == w ? 1 : 2 + index.at(op); };
    std::unordered_map<TensorId, int> tensor_in;
    int outputs_of_w = 0;
    std::vector<glp_arc*> w_arcs;
    double least_w = kMostUnits;
    for (size_t i = 0; i < region.size(); ++i) {
      for (EdgeId e : g_.in_edges(region[i])) {
        if (g_.is_control(e)) continue;
        const TensorId t = g_.edge_tensor(e);
        auto [it, added] = tensor_in.try_emplace(t, 0);
        if (added) {
          const OpId producer = g_.edge_src(e);
          outputs_of_w += producer == w;
          double hop = kInfinity;
          for (DeviceId d : classes_.members[c]) {
            hop = std::min(hop, cost_.LinkTime(g_.tensor_bytes(t), link[d]));
          }
          it->second = glp_add_vertices(net, 2);
          arc(vertex(producer), it->second, kThrough);
          const double units =
              std::floor(std::min(hop * kUnitsPerSecond, kMostUnits));
          glp_arc* carried = arc(it->second, it->second + 1, units);
          if (producer == w) {
            w_arcs.push_back(carried);
            least_w = std::min(least_w, units);
          }
        }
        arc(it->second + 1, 2 + static_cast<int>(i), kThrough);
      }
    }
    // Every flow leaves through w's tensors: at most 64 keep it an int.
    auto flows = [&](std::vector<double>* out) {
      out->assign(region.size(), 0);
      for (size_t i = 0; i < region.size() && outputs_of_w <= 64; ++i) {
        double flow = 0;
        if (glp_maxflow_ffalg(net, 1, 2 + static_cast<int>(i), 0, &flow, -1,
                              -1) == 0) {
          (*out)[i] = flow / kUnitsPerSecond;
        }
      }
    };
    flows(&floors);
    if (at_least_w != nullptr) {
      for (glp_arc* a : w_arcs) std::memcpy(a->data, &least_w, sizeof(double));
      *w_hop = w_arcs.empty() ? 0 : least_w / kUnitsPerSecond;
      flows(at_least_w);
    }
    glp_delete_graph(net);
    return floors;
  }

  // Per class c: after the last tensor of such a cut leaves w's device,
  // how long at least until an op on a device of class c can start, when
  // no device of c is the far end of that link (else 0). The tensor's
  // reader y is on u's device, and the tensor's last hop into it starts
  // after its first ends; or y is elsewhere, and an op between y and u
  // sends a tensor (or a control edge's latency) into u's device after y
  // started. Either is an edge of the region entering a device of class c:
  // at least the least such hop.
  // A source op other than w (a weight) follows no op: its edges are left
  // out.
  std::vector<double> NextHops(OpId w, const std::vector<OpId>& region,
                               int cw) const {
    std::vector<double> hops(nc_, 0);
    if (single_exit_.empty() || !single_exit_[cw]) return hops;
    // A hop's time grows with its bytes: the region's smallest tensor (a
    // control edge: none) gives each link's least hop.
    int64_t least_bytes = std::numeric_limits<int64_t>::max();
    for (OpId u : region) {
      for (EdgeId e : g_.in_edges(u)) {
        const OpId from = g_.edge_src(e);
        if (from != w && g_.in_edges(from).empty()) continue;
        least_bytes =
            std::min(least_bytes,
                     g_.is_control(e) ? 0 : g_.tensor_bytes(g_.edge_tensor(e)));
      }
    }
    if (least_bytes == std::numeric_limits<int64_t>::max()) return hops;
    for (int c = 0; c < nc_; ++c) {
      if (far_end_[cw * nc_ + c] || links_into_[c].empty()) continue;
      double least = kInfinity;
      for (LinkId l : links_into_[c]) {
        least = std::min(least, cost_.LinkTime(least_bytes, l));
      }
      hops[c] = least;
    }
    return hops;
  }

  const CostModel& cost_;
  const Graph& g_;
  const PathBoundOptions options_;
  bool keep_ = false;
  const DeviceClasses classes_;
  const std::vector<int64_t> capacity_;
  const int nc_;
  bool memory_binds_ = false;
  std::vector<int32_t> group_;    // Per op, with whole_groups; else empty.
  std::vector<double> transfer_;  // Per edge, class pair.
  std::vector<StepFn> f_;         // F(v, c), freed when read by all.
  std::vector<double> smallest_;  // G*(v, c).
  std::vector<char> seen_;
  std::vector<int32_t> position_;
  // KeepLinks: per device, its one outgoing (incoming) link (-1: none, or
  // several); per class, whether every device of it has one.
  std::vector<LinkId> exit_link_;
  std::vector<char> single_exit_;
  std::vector<LinkId> entry_link_;
  std::vector<char> single_entry_;
  std::vector<char> far_end_;                             // Per class pair.
  std::vector<std::vector<LinkId>> links_into_;           // Per class.
  std::vector<std::vector<std::vector<LinkId>>> routes_;  // KeepLinks.
};

Placement PathBound::Guide() const {
  const int n = g_.num_ops();
  // What a consumer asked of an op: its class and run memory, and the
  // consumer whose device it shares (-1: another device).
  struct Ask {
    double finish = -kInfinity;  // The asker's value: the most critical wins.
    int c = -1;
    int64_t m = 0;
    OpId share = -1;
  };
  std::vector<Ask> ask(n);
  std::vector<int> cls(n, 0);
  std::vector<int64_t> mem(n, 0);
  std::vector<OpId> parent(n);  // Union-find of ops on one device.
  for (OpId v = 0; v < n; ++v) parent[v] = v;
  std::function<OpId(OpId)> root = [&](OpId v) {
    while (parent[v] != v) v = parent[v] = parent[parent[v]];
    return v;
  };
  const std::vector<OpId>& order = g_.topological_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const OpId v = *it;
    if (ask[v].c >= 0) {
      cls[v] = ask[v].c;
      mem[v] = ask[v].m;
      if (ask[v].share >= 0) parent[v] = root(ask[v].share);
    } else {  // Nobody needs it on a device of theirs: its own best.
      double best = kInfinity;
      for (int c = 0; c < nc_; ++c) {
        if (smallest_[Key(v, c)] < best) {
          best = smallest_[Key(v, c)];
          cls[v] = c;
        }
      }
      const StepFn& at = f_[Key(v, cls[v])];
      mem[v] = at.empty() ? 0 : at.back().m;
    }
    const double finish = At(f_[Key(v, cls[v])], mem[v]);
    const int64_t m_in = mem[v] - g_.persistent_bytes(v);
    for (EdgeId e : g_.in_edges(v)) {
      const OpId u = g_.edge_src(e);
      const double same = At(f_[Key(u, cls[v])], m_in);
      int best_class = 0;
      double moved = kInfinity;
      for (int c = 0; c < nc_; ++c) {
        const double t = smallest_[Key(u, c)] + Transfer(e, c, cls[v]);
        if (t < moved) {
          moved = t;
          best_class = c;
        }
      }
      Ask a;
      a.finish = finish;
      if (same <= moved) {
        a.c = cls[v];
        a.m = m_in;
        a.share = v;
      } else {
        a.c = best_class;
        const StepFn& at = f_[Key(u, best_class)];
        a.m = at.empty() ? 0 : at.back().m;
      }
      if (a.finish > ask[u].finish) ask[u] = a;
    }
  }
  // Each group's memory and first position; groups to devices of their
  // class in topological order, first fit.
  std::vector<int64_t> bytes(n, 0);
  std::vector<int32_t> first(n, -1);
  for (size_t i = 0; i < order.size(); ++i) {
    const OpId v = order[i];
    const OpId r = root(v);
    bytes[r] += g_.persistent_bytes(v);
    for (int k = 0; k < g_.num_outputs(v); ++k) {
      bytes[r] += g_.tensor_bytes(g_.output(v, k));
    }
    if (first[r] < 0) first[r] = static_cast<int32_t>(i);
  }
  std::vector<OpId> groups;
  for (OpId v = 0; v < n; ++v) {
    if (root(v) == v) groups.push_back(v);
  }
  std::sort(groups.begin(), groups.end(),
            [&](OpId a, OpId b) { return first[a] < first[b]; });
  const Cluster& cluster = cost_.cluster();
  std::vector<int64_t> used(cluster.num_devices(), 0);
  std::vector<size_t> current(nc_, 0);  // Per class: the device filling.
  std::vector<DeviceId> device_of(n, 0);
  std::vector<char> placed(n, 0);
  std::vector<std::vector<OpId>> members(n);
  for (OpId v = 0; v < n; ++v) members[root(v)].push_back(v);
  auto fits = [&](DeviceId d, int64_t b) {
    return used[d] + b <= cluster.device(d).memory_bytes;
  };
  for (OpId r : groups) {
    const std::vector<DeviceId>& devices = classes_.members[cls[r]];
    // The device of its class that sends it the most bytes, if it has room.
    std::vector<int64_t> incoming(cluster.num_devices(), 0);
    for (OpId v : members[r]) {
      for (EdgeId e : g_.in_edges(v)) {
        const OpId u = root(g_.edge_src(e));
        if (u == r || !placed[u]) continue;
        incoming[device_of[u]] +=
            1 + (g_.is_control(e) ? 0 : g_.tensor_bytes(g_.edge_tensor(e)));
      }
    }
    DeviceId d = -1;
    for (DeviceId x : devices) {
      if (incoming[x] > 0 && fits(x, bytes[r]) &&
          (d < 0 || incoming[x] > incoming[d])) {
        d = x;
      }
    }
    size_t& k = current[cls[r]];
    while (k + 1 < devices.size() && !fits(devices[k], bytes[r])) ++k;
    if (d < 0) d = devices[k];
    if (used[d] + bytes[r] > cluster.device(d).memory_bytes) {
      // The class is full: the device of any class with the most room.
      for (DeviceId x = 0; x < cluster.num_devices(); ++x) {
        const int64_t room = cluster.device(x).memory_bytes - used[x];
        if (room > cluster.device(d).memory_bytes - used[d]) d = x;
      }
    }
    used[d] += bytes[r];
    device_of[r] = d;
    placed[r] = 1;
  }
  Placement placement(n);
  for (OpId v = 0; v < n; ++v) {
    const DeviceId d = device_of[root(v)];
    if (cost_.OpTime(v, d) < kInfinity) {
      placement[v] = d;
      continue;
    }
    for (DeviceId x = 0; x < cluster.num_devices(); ++x) {
      if (cost_.OpTime(v, x) < kInfinity) {
        placement[v] = x;
        break;
      }
    }
  }
  return placement;
}

}  // namespace

double MemoryPathBound(const CostModel& cost, const PathBoundOptions& options) {
  return PathBound(cost, options).Run();
}

Placement PathGuidedPlacement(const CostModel& cost,
                              const PathBoundOptions& options) {
  PathBound bound(cost, options);
  bound.KeepFunctions();
  bound.Run();
  return bound.Guide();
}

}  // namespace dplace
