#include "dplace/exec/executor.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "dplace/cost/cost_model.h"
#include "dplace/exec/caching_allocator.h"
#include "dplace/exec/profile.h"
#include "dplace/sim/simulator.h"
#include "dplace/zoo/zoo.h"

namespace dplace {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kN = 384;  // Square matrices: one MatMul ~ 11 ms.

OpSpec Matrix(const std::string& name, const std::string& type,
              Phase phase = Phase::kForward) {
  OpSpec spec;
  spec.name = name;
  spec.type = type;
  spec.phase = phase;
  spec.outputs.push_back({{kN, kN}, DataType::kFloat32, 0});
  spec.flops = 2.0 * kN * kN * kN;
  return spec;
}

// A variable feeding two independent chains of `depth` MatMuls (each
// multiplying by its own weight), joined by an Add.
Graph TwoBranches(int depth) {
  GraphBuilder b("two_branches");
  OpSpec x = Matrix("x", "VariableV2");
  x.persistent_bytes = kN * kN * 4;
  const OpId input = b.AddOp(x);
  OpId last[2];
  for (int branch = 0; branch < 2; ++branch) {
    const std::string prefix = "b" + std::to_string(branch) + "/";
    OpSpec w = Matrix(prefix + "w", "VariableV2");
    w.persistent_bytes = kN * kN * 4;
    const OpId weight = b.AddOp(w);
    OpId prev = input;
    for (int i = 0; i < depth; ++i) {
      const OpId mm =
          b.AddOp(Matrix(prefix + "mm" + std::to_string(i), "MatMul"));
      b.AddEdge(prev, 0, mm);
      b.AddEdge(weight, 0, mm);
      prev = mm;
    }
    last[branch] = prev;
  }
  const OpId sum = b.AddOp(Matrix("sum", "Add"));
  b.AddEdge(last[0], 0, sum);
  b.AddEdge(last[1], 0, sum);
  StatusOr<Graph> graph = std::move(b).Build();
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  return std::move(*graph);
}

// Ops of branch 1 on device 1, the rest on device 0.
Placement SplitPlacement(const Graph& graph) {
  Placement p(graph.num_ops(), 0);
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    if (graph.op_name(op).rfind("b1/", 0) == 0) p[op] = 1;
  }
  return p;
}

std::vector<ExecDevice> TwoCpus() {
  StatusOr<std::vector<ExecDevice>> devices = ParseExecDevices("cpu:0,cpu:1");
  EXPECT_TRUE(devices.ok()) << devices.status().message();
  return *devices;
}

// Seconds two threads take for four matrix products each, over the seconds
// one thread takes for all eight: about 0.5 where two cores are free. The
// largest of three rounds: the second core must stay free, not be free for
// a moment (a busy machine passed the best of three and then failed).
double ParallelRatio() {
  const at::Tensor a = at::rand({kN, kN});
  auto work = [&](int n) {
    at::set_num_threads(1);
    for (int i = 0; i < n; ++i) at::mm(a, a);
  };
  double worst = 0;
  for (int round = 0; round < 3; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    std::thread(work, 8).join();
    auto t1 = std::chrono::steady_clock::now();
    std::thread x(work, 4), y(work, 4);
    x.join();
    y.join();
    auto t2 = std::chrono::steady_clock::now();
    worst = std::max(worst, std::chrono::duration<double>(t2 - t1).count() /
                                std::chrono::duration<double>(t1 - t0).count());
  }
  return worst;
}

TEST(ExecutorTest, TwoBranchesOnTwoCpuDevicesRunFasterThanOnOne) {
  // What the executor can show depends on what the machine gives now.
  const double machine = ParallelRatio();
  if (machine > 0.7) {
    GTEST_SKIP() << "two plain threads take " << machine
                 << " of one thread's time here: no second core is free";
  }
  const Graph graph = TwoBranches(8);
  ExecOptions options;
  options.measured_steps = 5;
  auto executor = Executor::Create(graph, TwoCpus(), options);
  ASSERT_TRUE(executor.ok()) << executor.status().message();
  // The best of three measurements of each, alternating, so that a burst
  // of other work on the machine does not decide the comparison.
  double one = 1e9, two = 1e9;
  for (int round = 0; round < 3; ++round) {
    StatusOr<ExecResult> a =
        (*executor)->Measure(Placement(graph.num_ops(), 0));
    StatusOr<ExecResult> b = (*executor)->Measure(SplitPlacement(graph));
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_TRUE(a->feasible) << a->infeasible_reason;
    ASSERT_TRUE(b->feasible) << b->infeasible_reason;
    EXPECT_EQ(a->step_times.size(), 5u);
    one = std::min(one, a->step_time);
    two = std::min(two, b->step_time);
  }
  // Other work that started during the measurements takes the second core
  // as well: a comparison the machine did not allow, not a failure.
  if (two >= 0.8 * one) {
    const double after = ParallelRatio();
    if (after > 0.7) {
      GTEST_SKIP() << "one device " << one << " s, two " << two
                   << " s, while two plain threads took " << after
                   << " of one thread's time: the second core was taken";
    }
  }
  // Two cores work at once: ideally half; well under the one-device time.
  EXPECT_LT(two, 0.8 * one)
      << "one device " << one << " s, two " << two << " s";
  EXPECT_TRUE((*executor)->stand_ins().empty());
}

TEST(ExecutorTest, StepTimeLiesWithinTheSimulatorsBoundsWithProfiledCosts) {
  const Graph graph = TwoBranches(6);
  auto executor = Executor::Create(graph, TwoCpus());
  ASSERT_TRUE(executor.ok()) << executor.status().message();
  // The cost model's profile table and the real step time, measured here:
  // the best of three rounds of each, alternating, so that a burst of other
  // work on the machine during one of them does not decide the comparison.
  const Placement split = SplitPlacement(graph);
  std::vector<double> times(graph.num_ops(), 1e9);
  double copy = 1e9, real = 1e9;
  for (int round = 0; round < 3; ++round) {
    StatusOr<std::vector<double>> profiled = (*executor)->ProfileOps(0, 3);
    ASSERT_TRUE(profiled.ok()) << profiled.status().message();
    for (OpId op = 0; op < graph.num_ops(); ++op) {
      times[op] = std::min(times[op], (*profiled)[op]);
    }
    StatusOr<ExecResult> measured = (*executor)->Measure(split);
    ASSERT_TRUE(measured.ok() && measured->feasible);
    real = std::min(real, measured->step_time);
    // Beside other work, the copy benchmark sometimes takes a scheduler
    // slice (about 4 ms here, against 0.05 ms) handing over to the reader.
    StatusOr<double> copied = (*executor)->TimeCopy(0, 1, kN * kN * 4, 5);
    ASSERT_TRUE(copied.ok()) << copied.status().message();
    copy = std::min(copy, *copied);
  }
  ProfileTable profile;
  double serial = 0;  // Every op one after another: an upper figure.
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    profile.by_name[graph.op_name(op)][DeviceKind::kCpu] = times[op];
    serial += times[op];
  }
  ClusterBuilder cb("local");
  for (const char* name : {"cpu:0", "cpu:1"}) {
    Device d;
    d.name = name;
    d.kind = DeviceKind::kCpu;
    d.peak_flops = 1e11;
    d.memory_bandwidth = 1e10;
    d.memory_bytes = int64_t{1} << 32;
    cb.AddDevice(d);
  }
  // A copy timed at 0 (the reader's step was the faster one) would make an
  // infinite bandwidth.
  copy = std::max(copy, 1e-6);
  cb.AddLink("cpu:0", "cpu:1", kN * kN * 4 / copy, 1e-6);
  StatusOr<Cluster> cluster = std::move(cb).Build();
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  const CostModel cost(graph, *cluster, profile);
  Simulator simulator(cost);
  StatusOr<SimResult> simulated = simulator.Simulate(split);
  ASSERT_TRUE(simulated.ok()) << simulated.status().message();
  const SimResult& sim = *simulated;
  serial += 2 * copy;  // Branch 1 receives x; sum receives branch 1.

  // Loose margins: this machine runs other work too.
  EXPECT_GE(real, 0.7 * sim.bounds.Max())
      << "lower bound " << sim.bounds.Max() << " (" << sim.bounds.MaxName()
      << "), simulated " << sim.step_time << ", copy " << copy;
  EXPECT_LE(real, 1.5 * serial) << "serial " << serial;
}

// A chain of 1,000 one-element Relus: ops of about a microsecond, so the
// executor's own cost between two ops is a large share of the step.
TEST(ExecutorTest, ProfiledOpTimesSumToTheOneDeviceStep) {
  StatusOr<Graph> graph = ReluChain(1000);
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto executor = Executor::Create(*graph, TwoCpus());
  ASSERT_TRUE(executor.ok()) << executor.status().message();
  double step = 0;
  StatusOr<std::vector<double>> times = (*executor)->ProfileOps(0, 5, &step);
  ASSERT_TRUE(times.ok()) << times.status().message();
  double profiled = 0;
  for (double t : *times) profiled += t;
  // The ops' own medians alone fall short of a step: the shares make up
  // the rest.
  EXPECT_NEAR(profiled, step, 1e-9 * step);
  // Scaled to the fastest run of 2 of 6 steps, the ops sum to that run.
  double fastest = 0;
  StatusOr<std::vector<double>> scaled =
      (*executor)->ProfileOps(0, 6, &fastest, /*window=*/2);
  ASSERT_TRUE(scaled.ok()) << scaled.status().message();
  double scaled_sum = 0;
  for (double t : *scaled) scaled_sum += t;
  EXPECT_GT(fastest, 0);
  EXPECT_NEAR(scaled_sum, fastest, 1e-9 * fastest);
  // And a measured step agrees with both, loosely: on this test's 2-core
  // virtual machine a run of this chain takes either about 1.3 ms a step
  // or, in the machine's spells (more often while other work runs), 2.5 to
  // 4 ms, the same mode through one call and changing between calls. So
  // each is taken five times and the fastest of each compared, within a
  // factor of 2.5 either way (an error of units fails it).
  double least_profiled = profiled, least_scaled = scaled_sum;
  double least_step = std::numeric_limits<double>::infinity();
  for (int call = 0; call < 5; ++call) {
    if (call > 0) {
      times = (*executor)->ProfileOps(0, 5, &step);
      scaled = (*executor)->ProfileOps(0, 6, &fastest, /*window=*/2);
      ASSERT_TRUE(times.ok() && scaled.ok());
      double sum = 0, scaled_total = 0;
      for (double t : *times) sum += t;
      for (double t : *scaled) scaled_total += t;
      least_profiled = std::min(least_profiled, sum);
      least_scaled = std::min(least_scaled, scaled_total);
    }
    StatusOr<ExecResult> measured =
        (*executor)->Measure(Placement(graph->num_ops(), 0));
    ASSERT_TRUE(measured.ok() && measured->feasible);
    least_step = std::min(least_step, measured->step_time);
  }
  bool agree = true;
  for (const double ops : {least_profiled, least_scaled}) {
    agree &= ops / least_step > 0.4 && ops / least_step < 2.5;
  }
  // Other work on the machine slows the measured step more than the
  // profile (5 steps of 4 ms against ops of 1.3 ms, beside a compiler): a
  // comparison the machine did not allow, not a failure.
  if (!agree) {
    const double machine = ParallelRatio();
    if (machine > 0.7) {
      GTEST_SKIP() << "ops " << least_profiled << " and " << least_scaled
                   << " s, step " << least_step << " s, while two plain "
                   << "threads take " << machine << " of one's time";
    }
  }
  for (const double ops : {least_profiled, least_scaled}) {
    EXPECT_GT(ops / least_step, 0.4)
        << "ops " << ops << " s, step " << least_step << " s";
    EXPECT_LT(ops / least_step, 2.5)
        << "ops " << ops << " s, step " << least_step << " s";
  }
  EXPECT_FALSE((*executor)->ProfileOps(0, 6, nullptr, -1).ok());
}

TEST(CachingAllocatorTest, AFreedBlockIsHandedOutAgainForTheSameSize) {
  UseCachingCpuAllocator();
  void* first = nullptr;
  {
    const at::Tensor a = at::empty({12345}, at::kFloat);
    first = a.data_ptr();
  }
  const CachingAllocatorStats before = CachingCpuAllocatorStats();
  EXPECT_GE(before.cached_bytes, 12345 * 4);
  const at::Tensor b = at::empty({12345}, at::kFloat);
  EXPECT_EQ(b.data_ptr(), first);
  const CachingAllocatorStats after = CachingCpuAllocatorStats();
  EXPECT_EQ(after.reused, before.reused + 1);
  EXPECT_EQ(after.in_use_bytes, before.in_use_bytes + 12345 * 4);
  // Another size is not served from that block.
  const at::Tensor c = at::empty({12346}, at::kFloat);
  EXPECT_NE(c.data_ptr(), first);
  // Allocation failures still throw, as the executor's OOM reports need.
  EXPECT_THROW(at::empty({int64_t{1} << 50}, at::kByte), c10::Error);
}

// Minor page faults of this process so far.
int64_t MinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

TEST(ExecutorTest, SteadyStepsReuseFreedMemory) {
  // A 16 MiB variable through a chain of Relus that alternate between the
  // devices: every step allocates and frees 16 MiB tensors on both threads.
  constexpr int64_t kFloats = int64_t{1} << 22;
  GraphBuilder b("big_chain");
  OpSpec x;
  x.name = "x";
  x.type = "VariableV2";
  x.outputs.push_back({{kFloats}, DataType::kFloat32, 0});
  OpId prev = b.AddOp(x);
  for (int i = 0; i < 8; ++i) {
    OpSpec relu = x;
    relu.name = "relu" + std::to_string(i);
    relu.type = "Relu";
    const OpId op = b.AddOp(relu);
    b.AddEdge(prev, 0, op);
    prev = op;
  }
  StatusOr<Graph> graph = std::move(b).Build();
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  Placement alternating(graph->num_ops(), 0);
  for (OpId op = 0; op < graph->num_ops(); op += 2) alternating[op] = 1;
  ExecOptions options;
  options.warmup_steps = 1;
  options.measured_steps = 10;
  auto executor = Executor::Create(*graph, TwoCpus(), options);
  ASSERT_TRUE(executor.ok()) << executor.status().message();
  ASSERT_TRUE((*executor)->Measure(alternating).ok());  // Memory grows here.
  options.measured_steps = 40;
  auto steady = Executor::Create(*graph, TwoCpus(), options);
  ASSERT_TRUE(steady.ok()) << steady.status().message();
  const int64_t before = MinorFaults();
  StatusOr<ExecResult> result = (*steady)->Measure(alternating);
  const int64_t faults = MinorFaults() - before;
  ASSERT_TRUE(result.ok());
  ASSERT_TRUE(result->feasible) << result->infeasible_reason;
  // A 16 MiB tensor faulted in afresh is 4096 pages; a step has 17 (8
  // Relus, 8 copies, the variable). With glibc's malloc alone more than
  // one a step was faulted in here (45,000-690,000 faults in 11-41 steps);
  // with the caching allocator every block comes from the first run.
  EXPECT_LT(faults, 4096) << faults << " minor page faults in 41 steps";
  EXPECT_GT(CachingCpuAllocatorStats().reused, 0);
}

TEST(ExecutorTest, TimelineHoldsEveryOpAndCopyOfOneMeasuredStep) {
  const Graph graph = TwoBranches(2);
  ExecOptions options;
  options.measured_steps = 3;
  options.record_timeline = true;
  auto executor = Executor::Create(graph, TwoCpus(), options);
  ASSERT_TRUE(executor.ok()) << executor.status().message();
  const Placement split = SplitPlacement(graph);
  StatusOr<ExecResult> result = (*executor)->Measure(split);
  ASSERT_TRUE(result.ok());
  ASSERT_TRUE(result->feasible) << result->infeasible_reason;
  std::vector<int> computed(graph.num_ops(), 0);
  std::vector<TimelineEvent> copies;
  std::vector<std::vector<TimelineEvent>> per_thread(2);
  // The traced step is one of the measured ones, and holds its events.
  const double traced = result->timeline_step_time;
  EXPECT_NE(
      std::find(result->step_times.begin(), result->step_times.end(), traced),
      result->step_times.end());
  for (const TimelineEvent& e : result->timeline) {
    EXPECT_LE(0, e.start);
    EXPECT_LE(e.start, e.end);
    EXPECT_LE(e.end, traced);
    if (e.kind == TimelineEvent::Kind::kCompute) {
      ++computed[e.id];
      EXPECT_EQ(e.device, split[e.id]) << graph.op_name(e.id);
      per_thread[e.device].push_back(e);
    } else {
      copies.push_back(e);
      per_thread[e.lane].push_back(e);
    }
  }
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    EXPECT_EQ(computed[op], 1) << graph.op_name(op);
  }
  // x to branch 1's first MatMul, branch 1's weight stays on cpu:1 with
  // it, and branch 1's last MatMul to the Add on cpu:0.
  ASSERT_EQ(copies.size(), 2u);
  for (const TimelineEvent& c : copies) {
    EXPECT_EQ(c.device, split[graph.producer(c.id)]);
    EXPECT_NE(c.lane, c.device);
  }
  // One thread per device: its events never overlap.
  for (auto& events : per_thread) {
    std::sort(events.begin(), events.end(),
              [](const TimelineEvent& a, const TimelineEvent& b) {
                return a.start < b.start;
              });
    for (size_t i = 1; i < events.size(); ++i) {
      EXPECT_LE(events[i - 1].end, events[i].start);
    }
  }
  options.record_timeline = false;
  auto plain = Executor::Create(graph, TwoCpus(), options);
  StatusOr<ExecResult> untimed = (*plain)->Measure(split);
  ASSERT_TRUE(untimed.ok());
  EXPECT_TRUE(untimed->timeline.empty());
}

TEST(ExecutorTest, EachDeviceReportsItsOpAndCopyTimePerStep) {
  const Graph graph = TwoBranches(2);
  ExecOptions options;
  options.measured_steps = 3;
  auto executor = Executor::Create(graph, TwoCpus(), options);
  ASSERT_TRUE(executor.ok()) << executor.status().message();
  StatusOr<ExecResult> split = (*executor)->Measure(SplitPlacement(graph));
  ASSERT_TRUE(split.ok());
  ASSERT_TRUE(split->feasible) << split->infeasible_reason;
  ASSERT_EQ(split->op_seconds.size(), 2u);
  ASSERT_EQ(split->copy_seconds.size(), 2u);
  double slowest = 0;
  for (double t : split->step_times) slowest = std::max(slowest, t);
  for (int d = 0; d < 2; ++d) {
    // Both devices run ops and copy one tensor in (x to cpu:1, branch 1's
    // result to cpu:0); one thread per device works no longer than a step.
    EXPECT_GT(split->op_seconds[d], 0);
    EXPECT_GT(split->copy_seconds[d], 0);
    EXPECT_LE(split->op_seconds[d] + split->copy_seconds[d], slowest);
  }
  StatusOr<ExecResult> one =
      (*executor)->Measure(Placement(graph.num_ops(), 0));
  ASSERT_TRUE(one.ok());
  ASSERT_TRUE(one->feasible) << one->infeasible_reason;
  EXPECT_GT(one->op_seconds[0], 0);
  EXPECT_EQ(one->op_seconds[1], 0);
  EXPECT_EQ(one->copy_seconds[0], 0);
  EXPECT_EQ(one->copy_seconds[1], 0);
}

TEST(ExecutorTest, InjectedAllocationFailureIsInfeasibleNotACrash) {
  const Graph graph = TwoBranches(2);
  ExecOptions options;
  options.fail_allocation_in_op = "b1/mm1";
  auto executor = Executor::Create(graph, TwoCpus(), options);
  ASSERT_TRUE(executor.ok());
  StatusOr<ExecResult> result = (*executor)->Measure(SplitPlacement(graph));
  ASSERT_TRUE(result.ok());
  EXPECT_FALSE(result->feasible);
  EXPECT_THAT(result->infeasible_reason,
              HasSubstr("allocation failed on cpu:1 in op b1/mm1"));
  // The executor is still usable.
  options.fail_allocation_in_op.clear();
  auto again = Executor::Create(graph, TwoCpus(), options);
  StatusOr<ExecResult> ok = (*again)->Measure(SplitPlacement(graph));
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(ok->feasible) << ok->infeasible_reason;
}

TEST(ExecutorTest, GoingOverADevicesCapacityIsOutOfMemory) {
  const Graph graph = TwoBranches(2);
  std::vector<ExecDevice> devices = TwoCpus();
  // Room for x and w (persistent) and two of the 576 KiB outputs, not
  // more: cpu:1 holds w, a copy of x, mm0 and mm1 at its peak.
  devices[1].memory_bytes = 3 * kN * kN * 4 + 1;
  auto executor = Executor::Create(graph, devices);
  ASSERT_TRUE(executor.ok());
  StatusOr<ExecResult> result = (*executor)->Measure(SplitPlacement(graph));
  ASSERT_TRUE(result.ok());
  EXPECT_FALSE(result->feasible);
  EXPECT_THAT(result->infeasible_reason, HasSubstr("out of memory on cpu:1"));
  // On cpu:0 alone nothing is limited.
  StatusOr<ExecResult> single =
      (*executor)->Measure(Placement(graph.num_ops(), 0));
  ASSERT_TRUE(single.ok());
  EXPECT_TRUE(single->feasible) << single->infeasible_reason;
}

TEST(ExecutorTest, TimeoutIsInfeasible) {
  const Graph graph = TwoBranches(8);
  ExecOptions options;
  options.step_timeout_seconds = 1e-4;
  auto executor = Executor::Create(graph, TwoCpus(), options);
  ASSERT_TRUE(executor.ok());
  StatusOr<ExecResult> result =
      (*executor)->Measure(Placement(graph.num_ops(), 0));
  ASSERT_TRUE(result.ok());
  EXPECT_FALSE(result->feasible);
  EXPECT_THAT(result->infeasible_reason, HasSubstr("timeout"));
}

TEST(ExecutorTest, OpWithoutKernelRunsAStandInAndIsListed) {
  GraphBuilder b("fancy");
  OpSpec x = Matrix("x", "VariableV2");
  const OpId input = b.AddOp(x);
  const OpId fancy = b.AddOp(Matrix("fancy", "FancyNewOp"));
  const OpId relu = b.AddOp(Matrix("relu", "Relu"));
  b.AddEdge(input, 0, fancy);
  b.AddEdge(fancy, 0, relu);
  StatusOr<Graph> graph = std::move(b).Build();
  ASSERT_TRUE(graph.ok());
  auto executor = Executor::Create(*graph, TwoCpus());
  ASSERT_TRUE(executor.ok());
  StatusOr<ExecResult> result =
      (*executor)->Measure(Placement(graph->num_ops(), 1));
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->feasible);
  const std::vector<StandIn> stand_ins = (*executor)->stand_ins();
  ASSERT_EQ(stand_ins.size(), 1u);
  EXPECT_EQ(stand_ins[0].op_type, "FancyNewOp");
  EXPECT_EQ(stand_ins[0].count, 1);
  EXPECT_EQ(stand_ins[0].reason, "no kernel mapping");
}

TEST(ExecutorTest, BadDevicesAndPlacementsAreErrors) {
  EXPECT_THAT(ParseExecDevice("tpu:0").status().message(),
              HasSubstr("unknown kind \"tpu\""));
  EXPECT_THAT(ParseExecDevice("cpu").status().message(),
              HasSubstr("no device index"));
  EXPECT_THAT(ParseExecDevices("cpu:0,cpu:0").status().message(),
              HasSubstr("named twice"));
  if (!CudaAvailable()) {
    EXPECT_THAT(ParseExecDevice("cuda:0").status().message(),
                HasSubstr("no GPU usable by this LibTorch"));
  }
  const Graph graph = TwoBranches(1);
  auto executor = Executor::Create(graph, TwoCpus());
  ASSERT_TRUE(executor.ok());
  EXPECT_THAT(
      (*executor)->Measure(Placement(graph.num_ops(), 2)).status().message(),
      HasSubstr("on device 2, but there are 2 devices"));
  EXPECT_FALSE((*executor)->Measure(Placement(3, 0)).ok());
}

// Every zoo model's op types at its shapes, small: the kernels accept
// them (only the listed types run as stand-ins) and a step completes.
TEST(ExecutorTest, ZooModelsRunWithRealKernels) {
  for (const char* spec :
       {"resnet:depth=50,batch=1,image=32", "inception_v3:batch=1,image=75",
        "nmt:batch=2,units=16,vocab=50,source_steps=3,target_steps=3",
        "bert:batch=1,seq=8,vocab=50"}) {
    SCOPED_TRACE(spec);
    StatusOr<Graph> graph = MakeZooModel(spec);
    ASSERT_TRUE(graph.ok()) << graph.status().message();
    ExecOptions options;
    options.warmup_steps = 0;
    options.measured_steps = 1;
    auto executor = Executor::Create(*graph, TwoCpus(), options);
    ASSERT_TRUE(executor.ok());
    StatusOr<ExecResult> result =
        (*executor)->Measure(Placement(graph->num_ops(), 0));
    ASSERT_TRUE(result.ok());
    EXPECT_TRUE(result->feasible) << result->infeasible_reason;
    for (const StandIn& s : (*executor)->stand_ins()) {
      EXPECT_THAT(s.op_type, ::testing::AnyOf("DynamicStitch", "Unique",
                                              "OneHot", "SliceGrad"))
          << s.count << " ops: " << s.reason;
    }
  }
}

}  // namespace
}  // namespace dplace
