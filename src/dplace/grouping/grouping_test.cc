// Co-location heuristics, the k-way groupers, coarsening and the mapping
// back to an op placement.
#include "dplace/grouping/grouping.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "dplace/graph/random_graph.h"
#include "dplace/zoo/zoo.h"

namespace dplace {
namespace {

using ::testing::HasSubstr;

const Graph& SmallRnnlm() {
  static const Graph* graph =
      new Graph(*MakeZooModel("rnnlm:layers=1,steps=3"));
  return *graph;
}

// 2.5k ops with the locality of a CNN; batch 1 keeps it cheap to build.
const Graph& Inception() {
  static const Graph* graph = new Graph(*MakeZooModel("inception_v3:batch=1"));
  return *graph;
}

OpSpec Op(const std::string& name, const std::string& hint = "") {
  OpSpec s;
  s.name = name;
  s.type = "MatMul";
  s.outputs = {{{256}}};
  s.flops = 1e6;
  s.colocation_group = hint;
  return s;
}

// input (CPU only) -> a -> b -> c, and c forks to d and e. With
// `join_fork`, d and e share a colocation hint.
Graph ForkGraph(bool join_fork) {
  GraphBuilder b("fork");
  OpSpec input = Op("input");
  input.allowed_devices = DeviceKindSet::Only(DeviceKind::kCpu);
  const OpId in = b.AddOp(input);
  const OpId a = b.AddOp(Op("a"));
  const OpId bb = b.AddOp(Op("b"));
  const OpId c = b.AddOp(Op("c"));
  const OpId d = b.AddOp(Op("d", join_fork ? "tail" : ""));
  const OpId e = b.AddOp(Op("e", join_fork ? "tail" : ""));
  b.AddEdge(in, 0, a);
  b.AddEdge(a, 0, bb);
  b.AddEdge(bb, 0, c);
  b.AddEdge(c, 0, d);
  b.AddEdge(c, 0, e);
  return *std::move(b).Build();
}

GroupId GroupOf(const Graph& g, const Grouping& grouping,
                const std::string& name) {
  return grouping.group[*g.FindOp(name)];
}

// A uniformly random label per op, for comparing cuts.
Grouping RandomGrouping(const Graph& graph, int k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> labels(graph.num_ops());
  for (int32_t& l : labels) l = static_cast<int32_t>(rng() % k);
  return MakeGrouping(graph, labels);
}

// Whether the ops of `members` are connected through edges of the graph
// (either direction) that stay inside `members`.
bool Connected(const Graph& graph, const std::vector<OpId>& members) {
  std::set<OpId> inside(members.begin(), members.end()), seen{members[0]};
  std::vector<OpId> stack{members[0]};
  while (!stack.empty()) {
    const OpId v = stack.back();
    stack.pop_back();
    std::vector<OpId> next;
    for (EdgeId e : graph.out_edges(v)) next.push_back(graph.edge_dst(e));
    for (EdgeId e : graph.in_edges(v)) next.push_back(graph.edge_src(e));
    for (OpId w : next) {
      if (inside.count(w) && seen.insert(w).second) stack.push_back(w);
    }
  }
  return seen.size() == inside.size();
}

std::vector<OpId> AllOps(const Graph& graph) {
  std::vector<OpId> ops(graph.num_ops());
  for (OpId op = 0; op < graph.num_ops(); ++op) ops[op] = op;
  return ops;
}

TEST(GroupingTest, MakeGroupingNumbersGroupsByFirstOpInTopologicalOrder) {
  const Graph graph = ForkGraph(false);  // Ids are a topological order here.
  const Grouping g = MakeGrouping(graph, {7, 7, -3, 9, -3, 7});
  EXPECT_EQ(g.num_groups, 3);
  EXPECT_EQ(g.group, (std::vector<GroupId>{0, 0, 1, 2, 1, 0}));
  EXPECT_TRUE(ValidateGrouping(graph, g).ok());

  Grouping bad = g;
  bad.group[2] = 5;
  EXPECT_THAT(ValidateGrouping(graph, bad).message(), HasSubstr("op b"));
  bad = g;
  bad.num_groups = 4;
  EXPECT_THAT(ValidateGrouping(graph, bad).message(), HasSubstr("empty"));
}

TEST(ColocationGroupingTest, KeepsEveryOpWithItsGradientsAndUpdate) {
  const Graph& graph = SmallRnnlm();
  ColocationOptions hints_only;
  hints_only.absorb_single_consumer = false;
  for (const ColocationOptions& options : {hints_only, ColocationOptions{}}) {
    const Grouping g = ColocationGrouping(graph, options);
    ASSERT_TRUE(ValidateGrouping(graph, g).ok());
    int gradients = 0, updates = 0;
    for (OpId op = 0; op < graph.num_ops(); ++op) {
      const std::string& name = graph.op_name(op);
      if (graph.phase(op) == Phase::kBackward &&
          name.rfind("gradients/", 0) == 0 &&
          name.find("_grad/") != std::string::npos) {
        // "gradients/<forward op>_grad/<input>".
        const std::string forward = name.substr(10, name.rfind("_grad/") - 10);
        ASSERT_TRUE(graph.FindOp(forward).has_value()) << name;
        EXPECT_EQ(g.group[op], GroupOf(graph, g, forward)) << name;
        ++gradients;
      }
      if (graph.phase(op) == Phase::kUpdate) {
        // "<parameter>/Apply<Optimizer>".
        const std::string parameter = name.substr(0, name.rfind('/'));
        ASSERT_TRUE(graph.FindOp(parameter).has_value()) << name;
        EXPECT_EQ(g.group[op], GroupOf(graph, g, parameter)) << name;
        ++updates;
      }
    }
    EXPECT_GT(gradients, 20);
    EXPECT_GT(updates, 2);
  }

  // Hints alone make exactly the hint groups: one per hint, one per op
  // without a hint (every hint here is within one allowed set).
  const Grouping g = ColocationGrouping(graph, hints_only);
  std::set<std::string> hints;
  int unhinted = 0;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    if (graph.colocation_group(op).empty()) {
      ++unhinted;
    } else {
      hints.insert(graph.colocation_group(op));
    }
  }
  EXPECT_EQ(g.num_groups, static_cast<int>(hints.size()) + unhinted);
}

TEST(ColocationGroupingTest, AbsorptionCollapsesAChainAndStopsAtAFork) {
  const Graph graph = ForkGraph(/*join_fork=*/false);
  const Grouping g = ColocationGrouping(graph);
  EXPECT_EQ(GroupOf(graph, g, "a"), GroupOf(graph, g, "b"));
  EXPECT_EQ(GroupOf(graph, g, "b"), GroupOf(graph, g, "c"));
  EXPECT_NE(GroupOf(graph, g, "c"), GroupOf(graph, g, "d"));
  EXPECT_NE(GroupOf(graph, g, "c"), GroupOf(graph, g, "e"));
  EXPECT_NE(GroupOf(graph, g, "d"), GroupOf(graph, g, "e"));
  // The CPU-only input has a single consumer but stays apart: joining it
  // would tie the chain to the CPU.
  EXPECT_NE(GroupOf(graph, g, "input"), GroupOf(graph, g, "a"));
  EXPECT_EQ(g.num_groups, 4);

  ColocationOptions off;
  off.absorb_single_consumer = false;
  EXPECT_EQ(ColocationGrouping(graph, off).num_groups, graph.num_ops());
}

TEST(ColocationGroupingTest, AbsorptionRepeatsUntilNothingMerges) {
  // Once d and e are one group (a hint), the fork c has a single consumer
  // group and joins it, and so does the chain above it.
  const Graph graph = ForkGraph(/*join_fork=*/true);
  const Grouping g = ColocationGrouping(graph);
  EXPECT_EQ(g.num_groups, 2);
  for (const char* name : {"a", "b", "c", "d"}) {
    EXPECT_EQ(GroupOf(graph, g, name), GroupOf(graph, g, "e")) << name;
  }
}

// A chain of twelve ops of 1 GB each collapses into one group, unless the
// absorption may not go below four groups or past 3 GB a group.
TEST(ColocationGroupingTest, AbsorptionStopsAtItsLimits) {
  GraphBuilder b("chain");
  for (int i = 0; i < 12; ++i) {
    OpSpec spec;
    spec.name = "op" + std::to_string(i);
    spec.type = "MatMul";
    spec.persistent_bytes = int64_t{1} << 30;
    spec.outputs.push_back({{1}});
    b.AddOp(spec);
    if (i > 0) b.AddEdge(i - 1, 0, i);
  }
  const Graph graph = *std::move(b).Build();
  EXPECT_EQ(ColocationGrouping(graph).num_groups, 1);
  ColocationOptions some;
  some.min_groups = 4;
  EXPECT_EQ(ColocationGrouping(graph, some).num_groups, 4);
  ColocationOptions small;
  small.max_group_persistent_bytes = int64_t{3} << 30;
  const Grouping g = ColocationGrouping(graph, small);
  EXPECT_GE(g.num_groups, 4);
  std::map<GroupId, int> size;
  for (OpId op = 0; op < graph.num_ops(); ++op) ++size[g.group[op]];
  for (const auto& [group, ops] : size) EXPECT_LE(ops, 3) << group;
}

TEST(ColocationGroupingTest, ScopeRuleMakesOneGroupPerLstmCell) {
  const Graph& graph = SmallRnnlm();
  ColocationOptions by_marker;
  by_marker.scope_marker = "step_";
  by_marker.absorb_single_consumer = false;
  ColocationOptions by_depth = by_marker;
  by_depth.scope_marker = "";
  by_depth.scope_depth = 2;
  for (const ColocationOptions& options : {by_marker, by_depth}) {
    const Grouping g = ColocationGrouping(graph, options);
    std::map<std::string, std::set<GroupId>> groups_of_cell;
    for (OpId op = 0; op < graph.num_ops(); ++op) {
      const std::string& scope = graph.scope(op);
      if (scope.rfind("lstm_0/step_", 0) == 0) {
        groups_of_cell[scope].insert(g.group[op]);
      }
    }
    ASSERT_EQ(groups_of_cell.size(), 3u);  // steps=3.
    std::set<GroupId> cells;
    for (const auto& [scope, groups] : groups_of_cell) {
      EXPECT_EQ(groups.size(), 1u) << scope;
      cells.insert(*groups.begin());
    }
    EXPECT_EQ(cells.size(), 3u);  // One group per cell, not one in all.
  }
}

TEST(ColocationGroupingTest, ScopeRuleMakesOneGroupPerInceptionBranch) {
  const Graph& graph = Inception();
  ColocationOptions options;
  options.scope_marker = "branch_";
  const Grouping g = ColocationGrouping(graph, options);
  std::map<std::string, std::set<GroupId>> groups_of_branch;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const std::string& scope = graph.scope(op);
    if (scope.rfind("mixed_5b/branch_", 0) == 0) {
      groups_of_branch[scope.substr(0, 17)].insert(g.group[op]);
    }
  }
  EXPECT_EQ(groups_of_branch.size(), 4u);
  for (const auto& [branch, groups] : groups_of_branch) {
    EXPECT_EQ(groups.size(), 1u) << branch;
  }
  EXPECT_LT(g.num_groups, ColocationGrouping(graph).num_groups / 3);
}

TEST(MetisGroupingTest, KNonEmptyGroupsPerSeedWithALowCut) {
  const Graph& graph = Inception();
  MetisGroupingOptions options;
  options.num_groups = 16;
  const StatusOr<Grouping> g = MetisGrouping(graph, options);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->num_groups, 16);
  EXPECT_TRUE(ValidateGrouping(graph, *g).ok());
  EXPECT_EQ(*MetisGrouping(graph, options), *g);
  options.seed = 7;
  EXPECT_NE(*MetisGrouping(graph, options), *g);  // The seed matters.

  const int64_t cut = CutBytes(graph, *g);
  const int64_t random_cut = CutBytes(graph, RandomGrouping(graph, 16, 1));
  EXPECT_LT(cut, random_cut / 10) << cut << " vs random " << random_cut;
}

TEST(MetisGroupingTest, AnyGroupCountFromOneToEveryOp) {
  const Graph& graph = SmallRnnlm();
  // Few ops per group (below 8, the agglomeration) and many (METIS).
  for (int k : {1, 2, 30, 31, graph.num_ops() / 2, graph.num_ops()}) {
    MetisGroupingOptions options;
    options.num_groups = k;
    const StatusOr<Grouping> g = MetisGrouping(graph, options);
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_EQ(g->num_groups, k);
    EXPECT_TRUE(ValidateGrouping(graph, *g).ok());
    if (k > 1 && k < graph.num_ops()) {
      EXPECT_LT(CutBytes(graph, *g),
                CutBytes(graph, RandomGrouping(graph, k, 3)))
          << k;
    }
  }
}

TEST(MetisGroupingTest, WeighsOpsByCostModelTime) {
  RandomGraphOptions random;
  random.num_ops = 600;
  random.seed = 5;
  const Graph graph = MakeRandomLayeredGraph(random);
  const Cluster cluster = *MakeClusterPreset("k80x2");
  const CostModel cost(graph, cluster);
  MetisGroupingOptions options;
  options.num_groups = 6;
  options.cost_model = &cost;
  const StatusOr<Grouping> g = MetisGrouping(graph, options);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->num_groups, 6);
  // Balanced by time: no group far above the average (METIS's tolerance
  // is 3%, but single ops can be heavy; allow 50%).
  std::vector<double> time(6, 0);
  double total = 0;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    time[g->group[op]] += cost.FastestOpTime(op);
    total += cost.FastestOpTime(op);
  }
  EXPECT_LT(*std::max_element(time.begin(), time.end()), 1.5 * total / 6);
  EXPECT_LT(CutBytes(graph, *g), CutBytes(graph, RandomGrouping(graph, 6, 2)));
}

TEST(FluidGroupingTest, KConnectedGroupsPerSeedWithALowCut) {
  for (const Graph* graph : {&Inception(), &SmallRnnlm()}) {
    ASSERT_TRUE(Connected(*graph, AllOps(*graph)));
    FluidGroupingOptions options;
    options.num_groups = 16;
    const StatusOr<Grouping> g = FluidGrouping(*graph, options);
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_EQ(g->num_groups, 16);
    EXPECT_TRUE(ValidateGrouping(*graph, *g).ok());
    EXPECT_EQ(*FluidGrouping(*graph, options), *g);
    options.seed = 2;
    EXPECT_NE(*FluidGrouping(*graph, options), *g);  // The seed matters.
    for (const std::vector<OpId>& members : GroupMembers(*graph, *g)) {
      EXPECT_TRUE(Connected(*graph, members));
    }
  }
  FluidGroupingOptions options;
  options.num_groups = 16;
  const int64_t cut =
      CutBytes(Inception(), *FluidGrouping(Inception(), options));
  const int64_t random_cut =
      CutBytes(Inception(), RandomGrouping(Inception(), 16, 1));
  EXPECT_LT(cut, random_cut / 10) << cut << " vs random " << random_cut;
}

TEST(FluidGroupingTest, DisconnectedGraphStillGivesKGroups) {
  // Two separate chains of 5 ops, and a lone op.
  GraphBuilder b("islands");
  for (int chain = 0; chain < 2; ++chain) {
    OpId prev = -1;
    for (int i = 0; i < 5; ++i) {
      const OpId op =
          b.AddOp(Op("c" + std::to_string(chain) + "_" + std::to_string(i)));
      if (prev >= 0) b.AddEdge(prev, 0, op);
      prev = op;
    }
  }
  b.AddOp(Op("alone"));
  const Graph graph = *std::move(b).Build();
  for (int k : {1, 2, 3, 5, 11}) {
    FluidGroupingOptions options;
    options.num_groups = k;
    const StatusOr<Grouping> g = FluidGrouping(graph, options);
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_EQ(g->num_groups, k);
  }
}

TEST(GroupersTest, RejectBadGroupCounts) {
  const Graph graph = ForkGraph(false);
  for (int k : {0, -1, graph.num_ops() + 1}) {
    MetisGroupingOptions metis;
    metis.num_groups = k;
    EXPECT_THAT(MetisGrouping(graph, metis).status().message(),
                HasSubstr("num_groups"));
    FluidGroupingOptions fluid;
    fluid.num_groups = k;
    EXPECT_THAT(FluidGrouping(graph, fluid).status().message(),
                HasSubstr("num_groups"));
  }
}

TEST(CoarsenGraphTest, SumsMatchTheGraphAndEdgesCountEachTensorOncePerGroup) {
  const Graph& graph = SmallRnnlm();
  MetisGroupingOptions options;
  options.num_groups = 12;
  const Grouping g = *MetisGrouping(graph, options);
  const GroupGraph c = CoarsenGraph(graph, g);
  ASSERT_EQ(c.num_groups, 12);

  double flops = 0;
  int64_t accessed = 0, persistent = 0, outputs = 0, memory = 0, ops = 0;
  for (GroupId i = 0; i < c.num_groups; ++i) {
    flops += c.flops[i];
    accessed += c.bytes_accessed[i];
    persistent += c.persistent_bytes[i];
    outputs += c.output_bytes[i];
    memory += c.memory_estimate[i];
    ops += c.num_ops[i];
  }
  int64_t graph_accessed = 0, graph_temporary = 0;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    graph_accessed += graph.bytes_accessed(op);
    graph_temporary += graph.temporary_bytes(op);
  }
  EXPECT_DOUBLE_EQ(flops, graph.total_flops());
  EXPECT_EQ(accessed, graph_accessed);
  EXPECT_EQ(persistent, graph.total_persistent_bytes());
  EXPECT_EQ(outputs, graph.total_output_bytes());
  EXPECT_EQ(memory, persistent + graph_temporary + outputs);
  EXPECT_EQ(ops, graph.num_ops());

  // Edge bytes, brute force: each tensor once per other consumer group.
  std::map<std::pair<GroupId, GroupId>, int64_t> expected;
  for (TensorId t = 0; t < graph.num_tensors(); ++t) {
    const OpId producer = graph.producer(t);
    std::set<GroupId> consumers;
    for (EdgeId e : graph.out_edges(producer)) {
      if (graph.edge_tensor(e) == t)
        consumers.insert(g.group[graph.edge_dst(e)]);
    }
    for (GroupId dst : consumers) {
      if (dst != g.group[producer]) {
        expected[{g.group[producer], dst}] += graph.tensor_bytes(t);
      }
    }
  }
  int64_t edge_bytes = 0;
  for (const GroupEdge& e : c.edges) {
    EXPECT_NE(e.src, e.dst);
    auto it = expected.find({e.src, e.dst});
    if (it == expected.end()) {
      EXPECT_EQ(e.bytes, 0);  // Only control edges.
    } else {
      EXPECT_EQ(e.bytes, it->second);
    }
    edge_bytes += e.bytes;
  }
  EXPECT_EQ(edge_bytes, CutBytes(graph, g));

  std::vector<GroupId> order = c.order;
  std::sort(order.begin(), order.end());
  for (GroupId i = 0; i < c.num_groups; ++i) EXPECT_EQ(order[i], i);
  // The forward pass reaches the backward pass and back: a cycle.
  EXPECT_FALSE(c.acyclic);
}

TEST(CoarsenGraphTest, OrderFollowsDependenciesNotFirstOps) {
  // p and q are sources, q -> r. Groups {p, r} (first by its first op, p)
  // and {q}: {p, r} consumes {q}, so {q} comes first.
  GraphBuilder b("order");
  const OpId p = b.AddOp(Op("p"));
  const OpId q = b.AddOp(Op("q"));
  const OpId r = b.AddOp(Op("r"));
  b.AddEdge(q, 0, r);
  const Graph graph = *std::move(b).Build();
  std::vector<int32_t> labels(3);
  labels[p] = labels[r] = 0;
  labels[q] = 1;
  const Grouping g = MakeGrouping(graph, labels);
  ASSERT_EQ(g.group[p], 0);
  const GroupGraph c = CoarsenGraph(graph, g);
  EXPECT_TRUE(c.acyclic);
  EXPECT_EQ(c.order, (std::vector<GroupId>{1, 0}));
  ASSERT_EQ(c.edges.size(), 1u);
  EXPECT_EQ(c.edges[0].src, 1);
  EXPECT_EQ(c.edges[0].bytes, graph.tensor_bytes(graph.output(q, 0)));

  // In a cycle, groups follow their ids; allowed kinds intersect.
  const Graph fork = ForkGraph(false);
  const GroupGraph cyclic =
      CoarsenGraph(fork, MakeGrouping(fork, {0, 1, 1, 1, 0, 1}));
  EXPECT_FALSE(cyclic.acyclic);  // input -> a, c -> d.
  EXPECT_EQ(cyclic.order, (std::vector<GroupId>{0, 1}));
  EXPECT_EQ(cyclic.allowed_devices[0], DeviceKindSet::Only(DeviceKind::kCpu));
  EXPECT_EQ(cyclic.allowed_devices[1], DeviceKindSet::All());
}

TEST(ExpandGroupPlacementTest, GroupDeviceForEveryOpAndAllowedKindsKept) {
  const Graph& graph = SmallRnnlm();
  const Cluster cluster = *MakeClusterPreset("k80x2");
  const DeviceId cpu = cluster.DevicesOfKind(DeviceKind::kCpu).front();
  const DeviceId gpu1 = cluster.DevicesOfKind(DeviceKind::kGpu).back();
  MetisGroupingOptions options;
  options.num_groups = 4;
  const Grouping g = *MetisGrouping(graph, options);
  std::vector<DeviceId> devices(g.num_groups, gpu1);
  devices[0] = cpu;
  const StatusOr<Placement> p =
      ExpandGroupPlacement(graph, cluster, g, devices);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE(ValidatePlacement(graph, cluster, *p).ok());
  int cpu_only = 0;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    if (!graph.allowed_devices(op).Contains(DeviceKind::kGpu)) {
      ++cpu_only;
      EXPECT_EQ((*p)[op], cpu) << graph.op_name(op);
    } else {
      EXPECT_EQ((*p)[op], devices[g.group[op]]) << graph.op_name(op);
    }
  }
  EXPECT_GT(cpu_only, 0);  // The input pipeline.

  EXPECT_THAT(ExpandGroupPlacement(graph, cluster, g, {cpu}).status().message(),
              HasSubstr("one per group"));
  devices[1] = cluster.num_devices();
  EXPECT_THAT(
      ExpandGroupPlacement(graph, cluster, g, devices).status().message(),
      HasSubstr("group 1"));
}

}  // namespace
}  // namespace dplace
