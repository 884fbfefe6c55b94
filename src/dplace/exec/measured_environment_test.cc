#include "dplace/exec/measured_environment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dplace/zoo/model_builder.h"

namespace dplace {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

// Two independent chains of matrix products joined at the end.
Graph TwoBranches() {
  ModelBuilder b("two_branches");
  std::vector<Tensor> ends;
  for (const char* branch : {"left", "right"}) {
    auto scope = b.Scope(branch);
    Tensor x = b.Const("x", {192, 192});
    const Tensor w = b.Const("w", {192, 192});
    for (int i = 0; i < 4; ++i) x = b.MatMul(x, w);
    ends.push_back(x);
  }
  b.Binary("Add", ends[0], ends[1], "join");
  return *std::move(b).Build();
}

Cluster CpuCluster(const std::vector<std::string>& names,
                   int64_t memory_bytes) {
  ClusterBuilder b("local");
  for (const std::string& name : names) {
    Device d;
    d.name = name;
    d.kind = name.rfind("cpu", 0) == 0 ? DeviceKind::kCpu : DeviceKind::kGpu;
    d.host = "host0";
    d.peak_flops = 1e10;
    d.memory_bandwidth = 1e10;
    d.memory_bytes = memory_bytes;
    b.AddDevice(d);
  }
  for (size_t i = 1; i < names.size(); ++i) {
    b.AddLink(names[0], names[i], 1e9, 1e-5);
  }
  return *std::move(b).Build();
}

ExecOptions Quick() {
  ExecOptions options;
  options.warmup_steps = 1;
  options.measured_steps = 2;
  return options;
}

TEST(MeasuredEnvironmentTest, MeasuresEachPlacementOfABatch) {
  const Graph g = TwoBranches();
  const Cluster c = CpuCluster({"cpu:0", "cpu:1"}, int64_t{1} << 30);
  StatusOr<std::unique_ptr<Environment>> env =
      NewMeasuredEnvironment(g, c, Quick());
  ASSERT_TRUE(env.ok()) << env.status().message();
  Placement split(g.num_ops(), 0);
  for (OpId op = 0; op < g.num_ops(); ++op) {
    if (g.op_name(op).rfind("right/", 0) == 0) split[op] = 1;
  }
  StatusOr<std::vector<Measurement>> m =
      (*env)->Evaluate({Placement(g.num_ops(), 0), split});
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 2u);
  for (const Measurement& r : *m) {
    EXPECT_TRUE(r.feasible) << r.infeasible_reason;
    EXPECT_GT(r.step_time, 0);
    EXPECT_GE(r.wall_seconds, 2 * r.step_time);  // Warm-up and 2 steps.
    ASSERT_EQ(r.peak_memory_bytes.size(), 2u);
  }
  // Everything on cpu:0 leaves cpu:1 empty; the split uses both.
  EXPECT_GT((*m)[0].peak_memory_bytes[0], 0);
  EXPECT_EQ((*m)[0].peak_memory_bytes[1], 0);
  EXPECT_GT((*m)[1].peak_memory_bytes[1], 0);
  // Invalid placements are refused before anything runs.
  StatusOr<std::vector<Measurement>> bad =
      (*env)->Evaluate({Placement(g.num_ops(), 5)});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("placement 0"));
}

TEST(MeasuredEnvironmentTest, OutOfMemoryIsAnInfeasibleMeasurement) {
  const Graph g = TwoBranches();
  // 192x192 floats are 147 kB each; 64 kB holds none of them.
  const Cluster c = CpuCluster({"cpu:0", "cpu:1"}, 64 << 10);
  StatusOr<std::unique_ptr<Environment>> env =
      NewMeasuredEnvironment(g, c, Quick());
  ASSERT_TRUE(env.ok()) << env.status().message();
  StatusOr<std::vector<Measurement>> m =
      (*env)->Evaluate({Placement(g.num_ops(), 1)});
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_FALSE((*m)[0].feasible);
  EXPECT_THAT((*m)[0].infeasible_reason,
              AnyOf(HasSubstr("memory"), HasSubstr("cpu:1")));
}

TEST(MeasuredEnvironmentTest, ClustersThatAreNotThisMachineAreErrors) {
  const Graph g = TwoBranches();
  // A preset-style name is not a device of this machine.
  StatusOr<std::unique_ptr<Environment>> env = NewMeasuredEnvironment(
      g, CpuCluster({"cpu:0", "gpu:0"}, int64_t{1} << 30), Quick());
  ASSERT_FALSE(env.ok());
  EXPECT_THAT(env.status().message(), HasSubstr("gpu:0"));
  if (!CudaAvailable()) {
    env = NewMeasuredEnvironment(
        g, CpuCluster({"cpu:0", "cuda:0"}, int64_t{1} << 30), Quick());
    ASSERT_FALSE(env.ok());
    EXPECT_THAT(env.status().message(), HasSubstr("cuda:0"));
  }
}

}  // namespace
}  // namespace dplace
