#include "dplace/fidelity/fidelity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <set>

#include "dplace/fidelity/calibration.h"
#include "dplace/fidelity/fidelity_report.h"
#include "dplace/graph/random_graph.h"
#include "dplace/sim/simulator.h"
#include "dplace/util/median.h"
#include "dplace/zoo/zoo.h"

namespace dplace {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAreArray;

Cluster TwoCpus() {
  ClusterBuilder b("two-cpus");
  for (int i = 0; i < 2; ++i) {
    Device d;
    d.name = "cpu:" + std::to_string(i);
    d.kind = DeviceKind::kCpu;
    d.host = "host0";
    d.peak_flops = 1e11;
    d.memory_bandwidth = 1e10;
    d.memory_bytes = int64_t{8} << 30;
    b.AddDevice(d);
  }
  b.AddLink("cpu:0", "cpu:1", 5e9, 1e-5);
  return *std::move(b).Build();
}

// The problem of placing the cost model's graph on its cluster.
PlacementProblem ProblemOf(const CostModel& cost) {
  PlacementProblem problem;
  problem.graph = &cost.graph();
  problem.cluster = &cost.cluster();
  problem.cost = &cost;
  return problem;
}

// A one-layer RNNLM small enough to simulate many times, on TwoCpus().
struct SmallRnnlm {
  const Graph graph =
      *MakeZooModel("rnnlm:layers=1,batch=4,steps=3,units=32,vocab=100");
  const Cluster cluster = TwoCpus();
  const CostModel cost{graph, cluster};
  const PlacementProblem problem = ProblemOf(cost);
};

TEST(RandomPlacementTest, PerGroupKeepsGroupsTogetherAndIsSeeded) {
  const SmallRnnlm rnnlm;
  const Graph& g = rnnlm.graph;
  const Cluster& c = rnnlm.cluster;
  const Placement a = RandomPlacement(g, c, true, 7);
  EXPECT_TRUE(ValidatePlacement(g, c, a).ok());
  EXPECT_EQ(a, RandomPlacement(g, c, true, 7));
  EXPECT_NE(a, RandomPlacement(g, c, true, 8));
  std::map<std::string, std::set<DeviceId>> devices_of_group;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    if (!g.colocation_group(op).empty()) {
      devices_of_group[g.colocation_group(op)].insert(a[op]);
    }
  }
  ASSERT_FALSE(devices_of_group.empty());
  for (const auto& [group, devices] : devices_of_group) {
    EXPECT_EQ(devices.size(), 1u) << group;
  }
  const Placement per_op = RandomPlacement(g, c, false, 7);
  EXPECT_TRUE(ValidatePlacement(g, c, per_op).ok());
  const std::set<DeviceId> used(per_op.begin(), per_op.end());
  EXPECT_EQ(used.size(), 2u);
}

// An environment that reports the simulated time times a factor, as a
// stand-in for real measurements; the factor may depend on the placement
// and on what was measured before. With step factors, it also times steps
// as real execution does: one per step factor, that times the scaled
// time, and the step time their median.
class ScaledEnvironment : public Environment {
 public:
  using Factor = std::function<double(const Placement&)>;
  using StepFactors = std::function<std::vector<double>(const Placement&)>;
  ScaledEnvironment(const CostModel& cost, Factor factor,
                    StepFactors step_factors = nullptr)
      : Environment(cost.graph(), cost.cluster()),
        sim_(cost),
        factor_(std::move(factor)),
        step_factors_(std::move(step_factors)) {}
  ScaledEnvironment(const CostModel& cost, double factor)
      : ScaledEnvironment(cost, [factor](const Placement&) { return factor; }) {
  }

 protected:
  std::vector<Measurement> DoEvaluate(
      const std::vector<Placement>& batch) override {
    std::vector<Measurement> out;
    for (const Placement& p : batch) {
      Measurement m;
      m.step_time = sim_.Simulate(p)->step_time * factor_(p);
      if (step_factors_) {
        for (double f : step_factors_(p))
          m.step_times.push_back(f * m.step_time);
        m.step_time = Median(m.step_times);
      }
      out.push_back(m);
    }
    return out;
  }

 private:
  Simulator sim_;
  Factor factor_;
  StepFactors step_factors_;
};

// The "machine" is the simulator on a cluster whose links have `scale`
// times TwoCpus()'s latency; calibration starts from TwoCpus().
struct CalibrationCase {
  explicit CalibrationCase(double scale)
      : machine_cluster(*ScaleLinkLatencies(rnnlm.cluster, scale)),
        machine_cost(rnnlm.graph, machine_cluster),
        machine(machine_cost, 1.0) {}
  StatusOr<LinkCalibration> Calibrate(const LinkCalibrationOptions& options) {
    return CalibrateLinks(rnnlm.problem, ProfileTable{}, &machine, options);
  }
  const SmallRnnlm rnnlm;
  const Cluster machine_cluster;
  const CostModel machine_cost;
  ScaledEnvironment machine;
};

TEST(CalibrateLinksTest, RecoversTheMachinesLinkLatency) {
  CalibrationCase c(3.0);
  LinkCalibrationOptions options;
  options.rounds = 2;
  int progress_calls = 0;
  options.progress = [&](int i, int n) {
    EXPECT_EQ(i, progress_calls++);
    EXPECT_EQ(n, 6);  // Three placements, two rounds.
  };
  StatusOr<LinkCalibration> cal = c.Calibrate(options);
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  EXPECT_EQ(progress_calls, 6);
  // The machine has no shared-host slowdown.
  EXPECT_NEAR(cal->shared_host_slowdown, 0, 1e-3);
  EXPECT_NEAR(cal->latency_scale, 3.0, 0.03);
  ASSERT_EQ(cal->cluster.num_links(), c.rnnlm.cluster.num_links());
  for (LinkId l = 0; l < cal->cluster.num_links(); ++l) {
    EXPECT_NEAR(cal->cluster.link(l).latency, 3e-5, 3e-7);
    EXPECT_EQ(cal->cluster.link(l).bandwidth,
              c.rnnlm.cluster.link(l).bandwidth);
  }
  // The random per-op placement moves tensors both ways; all-on-one none.
  EXPECT_EQ(std::count(cal->reference.begin(), cal->reference.end(), 0),
            c.rnnlm.graph.num_ops());
  EXPECT_EQ(cal->calibration,
            RandomPlacement(c.rnnlm.graph, c.rnnlm.cluster, false,
                            CalibrationPlacementSeed(options.seed)));
  EXPECT_EQ(cal->reference_rounds.size(), 2u);
  EXPECT_LT(cal->calibration_simulated_before, cal->calibration_measured);
  EXPECT_NEAR(cal->calibration_simulated_after / cal->reference_simulated,
              cal->calibration_measured / cal->reference_measured, 1e-6);
}

// 1 for every placement but `noisy`, whose k-th measurement (from 0) is
// scaled by factors[k % 2].
ScaledEnvironment::Factor NoisyFactor(const Placement& noisy,
                                      std::array<double, 2> factors) {
  return [noisy, factors, calls = 0](const Placement& p) mutable {
    return p == noisy ? factors[calls++ % 2] : 1.0;
  };
}

TEST(CalibrateLinksTest, KeepsTheBenchmarkWhereTheHalvesDisagree) {
  const SmallRnnlm rnnlm;
  const Placement random = RandomPlacement(rnnlm.graph, rnnlm.cluster, false,
                                           CalibrationPlacementSeed(1));
  LinkCalibrationOptions options;
  options.rounds = 4;
  // Rounds 1 and 3 say the links cost less than benchmarked, rounds 2
  // and 4 more: the fit to all rounds (their fastest) is below 1, but 1
  // lies between the halves' fits.
  ScaledEnvironment straddling(rnnlm.cost, NoisyFactor(random, {0.97, 1.05}));
  StatusOr<LinkCalibration> cal =
      CalibrateLinks(rnnlm.problem, {}, &straddling, options);
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  EXPECT_LT(cal->half_scales[0], 1);
  EXPECT_GT(cal->half_scales[1], 1);
  EXPECT_LT(cal->fitted_scale, 1);
  EXPECT_EQ(cal->latency_scale, 1);
  EXPECT_DOUBLE_EQ(cal->cluster.link(0).latency, rnnlm.cluster.link(0).latency);
  // Both halves above 1: the smaller of the fits.
  ScaledEnvironment slower(rnnlm.cost, NoisyFactor(random, {1.05, 1.10}));
  cal = CalibrateLinks(rnnlm.problem, {}, &slower, options);
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  EXPECT_GT(cal->half_scales[0], 1);
  EXPECT_GT(cal->half_scales[1], cal->half_scales[0]);
  EXPECT_DOUBLE_EQ(cal->latency_scale, cal->half_scales[0]);
  EXPECT_DOUBLE_EQ(cal->fitted_scale, cal->half_scales[0]);
}

TEST(RunFidelityTest, ComparesASecondCostModelWithTheSameMeasurements) {
  // The machine's links cost 3x TwoCpus()'s latency; the problem's cost
  // model has TwoCpus(), the compared one the machine's cluster.
  CalibrationCase c(3.0);
  FidelityOptions options;
  options.samples = 8;
  options.rounds = 1;
  options.compare_cost = &c.machine_cost;
  StatusOr<FidelityReport> report =
      RunFidelity(c.rnnlm.problem, &c.machine, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->compared.count, report->stats.count);
  EXPECT_NEAR(report->compared.mape, 0, 1e-12);
  EXPECT_GT(report->stats.mape, 0.001);
  for (const FidelitySample& s : report->samples) {
    EXPECT_DOUBLE_EQ(s.compared_simulated, s.measured.step_time) << s.label;
  }
  EXPECT_THAT(ComparedSummary(*report, "cluster x.json"),
              StartsWith("simulated with cluster x.json instead: MAPE 0.0%"));
  options.compare_cost = nullptr;
  report = RunFidelity(c.rnnlm.problem, &c.machine, options);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->compared.count, 0);
  EXPECT_EQ(ComparedSummary(*report, "cluster x.json"), "");
  EXPECT_TRUE(std::isnan(report->samples[0].compared_simulated));
}

TEST(RunFidelityTest, CalibratesTheLinksInTheSameRounds) {
  // The machine's links cost 3x the problem's latency: calibrated in the
  // rounds, every placement simulates at its measured time.
  CalibrationCase c(3.0);
  const ProfileTable roofline;  // What the problem's cost model was made of.
  FidelityOptions options;
  options.samples = 8;
  options.rounds = 2;
  options.calibrate_links = &roofline;
  std::vector<std::string> labels;
  int total = 0;
  options.progress = [&](int i, int n, const std::string& label) {
    EXPECT_EQ(i, static_cast<int>(labels.size()));
    total = n;
    labels.push_back(label);
  };
  StatusOr<FidelityReport> report =
      RunFidelity(c.rnnlm.problem, &c.machine, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(total, 2 * (static_cast<int>(report->samples.size()) + 3));
  EXPECT_EQ(static_cast<int>(labels.size()), total);
  // Every round measured the reference and the calibration placement too.
  EXPECT_EQ(std::count_if(labels.begin(), labels.end(),
                          [](const std::string& l) {
                            return l.rfind("calibration: ", 0) == 0;
                          }),
            6);
  ASSERT_TRUE(report->calibration.has_value());
  EXPECT_NEAR(report->calibration->latency_scale, 3.0, 0.03);
  EXPECT_EQ(report->calibration->reference_rounds.size(), 2u);
  EXPECT_LT(report->stats.mape, 0.005);
  EXPECT_GT(report->uncalibrated.mape, 0.01);
  EXPECT_EQ(report->uncalibrated.count, report->stats.count);
  for (const FidelitySample& s : report->samples) {
    EXPECT_NEAR(s.simulated, s.measured.step_time, 0.01 * s.simulated)
        << s.label;
    EXPECT_LT(s.uncalibrated_simulated, s.simulated + 1e-12) << s.label;
  }
  EXPECT_THAT(CalibrationSummary(*report),
              StartsWith("links calibrated in the same rounds: every latency "
                         "x3.0"));
  EXPECT_THAT(UncalibratedSummary(*report),
              StartsWith("simulated with the cluster's own link latencies "
                         "instead: MAPE "));
  // Without: nothing of it.
  options.calibrate_links = nullptr;
  options.progress = nullptr;
  report = RunFidelity(c.rnnlm.problem, &c.machine, options);
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->calibration.has_value());
  EXPECT_EQ(report->uncalibrated.count, 0);
  EXPECT_EQ(CalibrationSummary(*report), "");
  EXPECT_TRUE(std::isnan(report->samples[0].uncalibrated_simulated));
}

TEST(CalibrateLinksTest, RecoversTheMachinesSharedHostSlowdown) {
  // The machine runs every op 1.2x as long in a placement that uses both
  // of its devices, and its links cost 3x the problem's latency.
  const SmallRnnlm rnnlm;
  const Cluster machine_cluster =
      *WithSharedHostSlowdown(*ScaleLinkLatencies(rnnlm.cluster, 3.0),
                              rnnlm.cluster.device(0).host, 0.2);
  const CostModel machine_cost(rnnlm.graph, machine_cluster);
  ScaledEnvironment machine(machine_cost, 1.0);
  LinkCalibrationOptions options;
  options.rounds = 2;
  StatusOr<LinkCalibration> cal =
      CalibrateLinks(rnnlm.problem, ProfileTable{}, &machine, options);
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  // The split placement: the reference's last 60% of the ops on cpu:1.
  ASSERT_EQ(cal->split.size(), cal->reference.size());
  const int on_1 = std::count(cal->split.begin(), cal->split.end(), 1);
  EXPECT_GT(on_1, 0);
  EXPECT_LE(on_1, rnnlm.graph.num_ops() - rnnlm.graph.num_ops() * 2 / 5);
  EXPECT_EQ(cal->split_rounds.size(), 2u);
  EXPECT_NEAR(cal->shared_host_slowdown, 0.2, 0.002);
  EXPECT_NEAR(cal->latency_scale, 3.0, 0.05);
  for (DeviceId d = 0; d < cal->cluster.num_devices(); ++d) {
    EXPECT_NEAR(cal->cluster.device(d).shared_host_slowdown, 0.2, 0.002);
  }
  EXPECT_NEAR(cal->calibration_simulated_after / cal->reference_simulated,
              cal->calibration_measured / cal->reference_measured, 1e-6);
}

TEST(CalibrateLinksTest, ScalesTheProfileToTheReferencesMeasuredTime) {
  // The machine runs every op 1.5x as long as profiled, and its links
  // cost 3x the problem's latency.
  const SmallRnnlm rnnlm;
  ProfileTable profile, machine_profile;
  for (OpId op = 0; op < rnnlm.graph.num_ops(); ++op) {
    const double t = rnnlm.cost.OpTime(op, 0);
    profile.by_name[rnnlm.graph.op_name(op)][DeviceKind::kCpu] = t;
    machine_profile.by_name[rnnlm.graph.op_name(op)][DeviceKind::kCpu] =
        1.5 * t;
  }
  const CostModel cost(rnnlm.graph, rnnlm.cluster, profile);
  const Cluster machine_cluster = *ScaleLinkLatencies(rnnlm.cluster, 3.0);
  const CostModel machine_cost(rnnlm.graph, machine_cluster, machine_profile);
  ScaledEnvironment machine(machine_cost, 1.0);
  LinkCalibrationOptions options;
  options.rounds = 2;
  StatusOr<LinkCalibration> cal =
      CalibrateLinks(ProblemOf(cost), profile, &machine, options);
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  EXPECT_NEAR(cal->op_time_scale, 1.5, 1e-9);
  EXPECT_NEAR(cal->latency_scale, 3.0, 0.05);
  EXPECT_NEAR(cal->shared_host_slowdown, 0, 1e-3);
  EXPECT_NEAR(cal->reference_simulated, cal->reference_measured,
              1e-9 * cal->reference_measured);
}

TEST(CalibrateLinksTest, PoolsTheStepsOfItsRounds) {
  // The machine's links cost 3x the problem's latency; the calibration
  // placement has one undisturbed step in each round, the others 2x slow.
  // The median step of each round is 2x; the fastest quarter of the steps
  // of both rounds, pooled, is the undisturbed time.
  CalibrationCase c(3.0);
  const Placement calibration = RandomPlacement(
      c.rnnlm.graph, c.rnnlm.cluster, false, CalibrationPlacementSeed(1));
  ScaledEnvironment machine(
      c.machine_cost, [](const Placement&) { return 1.0; },
      [&, calls = 0](const Placement& p) mutable -> std::vector<double> {
        if (p != calibration) return {1, 1, 1, 1};
        return calls++ % 2 == 0 ? std::vector<double>{1, 2, 2, 2}
                                : std::vector<double>{2, 2, 2, 1};
      });
  LinkCalibrationOptions options;
  options.rounds = 2;
  StatusOr<LinkCalibration> cal =
      CalibrateLinks(c.rnnlm.problem, ProfileTable{}, &machine, options);
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  ASSERT_EQ(cal->calibration_steps.size(), 2u);
  EXPECT_EQ(cal->calibration_steps[0].size(), 4u);
  EXPECT_NEAR(cal->calibration_rounds[0], 2 * cal->calibration_steps[0][0],
              1e-12);
  EXPECT_NEAR(cal->latency_scale, 3.0, 0.03);
}

TEST(CalibrateLinksTest, NoLatencyWhenTheBytesAloneCostMoreThanMeasured) {
  CalibrationCase c(0.0);  // The machine's links: bandwidth, no latency.
  StatusOr<LinkCalibration> cal = c.Calibrate({});
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  EXPECT_NEAR(cal->latency_scale, 0.0, 1e-6);
  EXPECT_NEAR(cal->cluster.link(0).latency, 0.0, 1e-10);
}

TEST(CalibrateLinksTest, ErrorsNameWhatIsWrong) {
  CalibrationCase slow(1000.0);  // 10 ms a transfer: past max_latency.
  StatusOr<LinkCalibration> cal = slow.Calibrate({});
  EXPECT_THAT(cal.status().message(),
              HasSubstr("even with link latencies of 1000.000000 us"));
  LinkCalibrationOptions no_rounds;
  no_rounds.rounds = 0;
  EXPECT_THAT(slow.Calibrate(no_rounds).status().message(),
              HasSubstr("rounds must be >= 1, got 0"));
  // One device: no link to calibrate.
  ClusterBuilder b("one-cpu");
  b.AddDevice(slow.rnnlm.cluster.device(0));
  const Cluster one = *std::move(b).Build();
  const CostModel cost(slow.rnnlm.graph, one);
  ScaledEnvironment env(cost, 1.0);
  EXPECT_THAT(CalibrateLinks(ProblemOf(cost), {}, &env, {}).status().message(),
              HasSubstr("has no link with a latency to scale"));
}

TEST(RunFidelityTest, ComparesEveryPlacementWithTheMeasurement) {
  const Graph g =
      *MakeZooModel("rnnlm:layers=2,batch=4,steps=3,units=32,vocab=100");
  const Cluster c = TwoCpus();
  const CostModel cost(g, c);
  const PlacementProblem problem = ProblemOf(cost);
  ScaledEnvironment env(cost, 2.0);
  FidelityOptions options;
  options.samples = 12;
  int progress_calls = 0;
  options.progress = [&](int i, int n, const std::string& label) {
    EXPECT_EQ(i, progress_calls++);
    EXPECT_GE(n, 12);
  };
  StatusOr<FidelityReport> report = RunFidelity(problem, &env, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_GE(report->samples.size(), 12u);
  // Two rounds by default, each measuring every placement.
  EXPECT_EQ(progress_calls, 2 * static_cast<int>(report->samples.size()));
  EXPECT_EQ(report->samples[0].label, "single cpu:0");
  EXPECT_EQ(report->samples[1].label, "single cpu:1");
  bool has_placer = false, has_random = false;
  for (const FidelitySample& s : report->samples) {
    has_placer |= s.label == "m-etf";
    has_random |= s.label.rfind("random per op", 0) == 0;
  }
  EXPECT_TRUE(has_placer);
  EXPECT_TRUE(has_random);
  // Measured = 2 x simulated: every prediction is 50% low, ranks agree.
  EXPECT_EQ(report->stats.count, static_cast<int>(report->samples.size()));
  EXPECT_NEAR(report->stats.mape, 0.5, 1e-9);
  EXPECT_NEAR(report->stats.max_ape, 0.5, 1e-9);
  EXPECT_NEAR(report->stats.spearman, 1.0, 1e-9);
  EXPECT_NEAR(report->stats.kendall, 1.0, 1e-9);
  // The environment repeats itself exactly.
  EXPECT_EQ(report->retest.count, report->stats.count);
  EXPECT_NEAR(report->retest.mape, 0, 1e-12);

  const std::string table = FidelityTableMarkdown(*report);
  EXPECT_THAT(table, HasSubstr("| single cpu:0 | "));
  EXPECT_THAT(table, HasSubstr("-50.0%"));
  const std::string svg = FidelityScatterSvg(*report, "rnnlm");
  EXPECT_THAT(svg, StartsWith("<svg"));
  EXPECT_THAT(svg, HasSubstr("simulated = measured"));
}

// The simulator as a machine that also reports each device's op time, its
// ops running `split_slowdown` times slower than simulated whenever the
// placement uses more than one device (and the step with them).
class SplitSlowdownEnvironment : public Environment {
 public:
  SplitSlowdownEnvironment(const CostModel& cost, double split_slowdown)
      : Environment(cost.graph(), cost.cluster()),
        sim_(cost),
        split_slowdown_(split_slowdown) {}

 protected:
  std::vector<Measurement> DoEvaluate(
      const std::vector<Placement>& batch) override {
    std::vector<Measurement> out;
    for (const Placement& p : batch) {
      const SimResult r = *sim_.Simulate(p);
      int used = 0;
      for (int32_t count : r.device_op_count) used += count > 0;
      const double factor = used > 1 ? split_slowdown_ : 1.0;
      Measurement m;
      m.step_time = r.step_time * factor;
      for (double busy : r.device_busy_seconds) {
        m.op_seconds.push_back(busy * factor);
      }
      out.push_back(m);
    }
    return out;
  }

 private:
  Simulator sim_;
  double split_slowdown_;
};

TEST(RunFidelityTest, ComparesEachPlacementsOpTimeWithTheProfiles) {
  const SmallRnnlm rnnlm;
  SplitSlowdownEnvironment env(*rnnlm.problem.cost, 1.2);
  FidelityOptions options;
  options.samples = 10;
  StatusOr<FidelityReport> report = RunFidelity(rnnlm.problem, &env, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  for (const FidelitySample& s : report->samples) {
    ASSERT_GT(s.simulated_op_seconds, 0) << s.label;
    const double expected = s.devices_used > 1 ? 1.2 : 1.0;
    EXPECT_NEAR(s.measured_op_seconds / s.simulated_op_seconds, expected, 1e-9)
        << s.label;
  }
  // single cpu:0 and cpu:1 on one device; the random placements on two.
  ASSERT_EQ(report->op_time_ratios.size(), 2u);
  EXPECT_EQ(report->op_time_ratios[0].devices, 1);
  EXPECT_GE(report->op_time_ratios[0].samples, 2);
  EXPECT_NEAR(report->op_time_ratios[0].mean_ratio, 1.0, 1e-9);
  EXPECT_EQ(report->op_time_ratios[1].devices, 2);
  EXPECT_NEAR(report->op_time_ratios[1].mean_ratio, 1.2, 1e-9);
  EXPECT_THAT(OpTimeSummary(*report),
              StartsWith("op time, measured over simulated: x1.00 on 1 "
                         "device ("));
  EXPECT_THAT(OpTimeSummary(*report), HasSubstr(", x1.20 on 2 devices ("));
  EXPECT_THAT(FidelityTableMarkdown(*report),
              HasSubstr("| op time, measured / simulated |"));
  EXPECT_THAT(FidelityTableMarkdown(*report), HasSubstr(" | x1.20 | "));

  // An environment without op times (the simulator) leaves them out.
  ScaledEnvironment plain(*rnnlm.problem.cost, 1.0);
  StatusOr<FidelityReport> without =
      RunFidelity(rnnlm.problem, &plain, options);
  ASSERT_TRUE(without.ok()) << without.status().message();
  EXPECT_TRUE(without->op_time_ratios.empty());
  EXPECT_EQ(OpTimeSummary(*without), "");
  EXPECT_THAT(FidelityTableMarkdown(*without), Not(HasSubstr("op time")));
}

// Measurement k (from 0) scaled by factors[k / placements]: the machine
// slowing down round after round.
ScaledEnvironment::Factor DriftingFactor(int placements,
                                         std::vector<double> factors) {
  return [placements, factors, calls = 0](const Placement&) mutable {
    return factors[calls++ / placements];
  };
}

// RunFidelity over SmallRnnlm's placements in three rounds, which a
// DriftingFactor slows by 1.0, 1.2 and 3.0.
class DriftingRoundsTest : public ::testing::Test {
 protected:
  DriftingRoundsTest() {
    options_.samples = 8;
    options_.placers = {};
    options_.rounds = 3;
    n_ = static_cast<int>(FidelityPlacements(rnnlm_.problem, options_).size());
    options_.progress = [this](int, int, const std::string& label) {
      labels_.push_back(label);
    };
  }

  StatusOr<FidelityReport> Run() {
    ScaledEnvironment env(rnnlm_.cost, DriftingFactor(n_, {1.0, 1.2, 3.0}));
    return RunFidelity(rnnlm_.problem, &env, options_);
  }

  const SmallRnnlm rnnlm_;
  FidelityOptions options_;
  int n_ = 0;                        // Placements.
  std::vector<std::string> labels_;  // In the order measured.
};

TEST_F(DriftingRoundsTest, RoundsTakeTheFastestAndCompareEvenWithOdd) {
  const int n = n_;
  options_.statistic = RoundStatistic::kFastest;
  StatusOr<FidelityReport> report = Run();
  ASSERT_TRUE(report.ok()) << report.status().message();
  // The fastest round's factor, 1.0: every prediction is right.
  EXPECT_NEAR(report->samples[0].measured.step_time,
              report->samples[0].simulated, 1e-12);
  EXPECT_NEAR(report->stats.mape, 0, 1e-9);
  EXPECT_NEAR(report->stats.spearman, 1.0, 1e-9);
  // Round 2 (factor 1.2) against the faster of rounds 1 and 3 (1.0).
  EXPECT_EQ(report->retest.count, n);
  EXPECT_NEAR(report->retest.mape, 0.2, 1e-9);
  // The other statistics: the fastest quarter of 3 rounds is the fastest
  // (1.0); the median round is 1.2.
  ASSERT_EQ(report->other_statistics.size(), 2u);
  const FidelityReport::OtherStatistic& quarter = report->other_statistics[0];
  const FidelityReport::OtherStatistic& median = report->other_statistics[1];
  EXPECT_EQ(quarter.statistic, RoundStatistic::kFastestQuarter);
  EXPECT_NEAR(quarter.stats.mape, 0, 1e-9);
  EXPECT_EQ(median.statistic, RoundStatistic::kMedian);
  EXPECT_EQ(median.stats.count, n);
  EXPECT_NEAR(median.stats.mape, 0.2 / 1.2, 1e-9);
  // Each with its own re-measurement: round 2 (1.2) against the median of
  // rounds 1 and 3 (2.0), 40% low, the same ranks.
  EXPECT_NEAR(quarter.retest.mape, report->retest.mape, 1e-9);
  EXPECT_NEAR(median.retest.mape, 0.4, 1e-9);
  EXPECT_THAT(OtherStatisticSummary(*report, median),
              StartsWith("with the median of the rounds instead of the "
                         "fastest round: MAPE 16.7%"));
  EXPECT_THAT(OtherStatisticSummary(*report, median),
              EndsWith("; re-measured Spearman 1.000"));
  EXPECT_THAT(FidelityTableMarkdown(*report),
              HasSubstr("| measured (s, the fastest round) |"));
}

TEST_F(DriftingRoundsTest, RoundsTakeTheMedianAndCompareEvenWithOdd) {
  const int n = n_;
  const std::vector<std::string>& labels = labels_;
  options_.statistic = RoundStatistic::kMedian;
  StatusOr<FidelityReport> report = Run();
  ASSERT_TRUE(report.ok()) << report.status().message();
  // Every round measures every placement once; round 1 in order, the
  // later ones shuffled (with 8 placements, identity twice is 1 in 40320^2).
  ASSERT_EQ(static_cast<int>(labels.size()), 3 * n);
  std::vector<std::string> in_order;
  for (const FidelitySample& s : report->samples) in_order.push_back(s.label);
  std::vector<std::string> round[3];
  for (int r = 0; r < 3; ++r) {
    round[r].assign(labels.begin() + r * n, labels.begin() + (r + 1) * n);
  }
  EXPECT_EQ(round[0], in_order);
  EXPECT_FALSE(round[1] == in_order && round[2] == in_order);
  for (int r = 1; r < 3; ++r) {
    EXPECT_THAT(round[r], UnorderedElementsAreArray(in_order));
  }
  // The median round's factor, 1.2: simulated is 1/1.2 of measured.
  const FidelitySample& s = report->samples[0];
  ASSERT_EQ(s.round_step_times.size(), 3u);
  EXPECT_NEAR(s.measured.step_time, 1.2 * s.simulated, 1e-12);
  EXPECT_NEAR(report->stats.mape, 0.2 / 1.2, 1e-9);
  // Round 2 (factor 1.2) against the median of rounds 1 and 3 (factor 2):
  // 40% low, same ranks.
  EXPECT_EQ(report->retest.count, n);
  EXPECT_NEAR(report->retest.mape, 0.4, 1e-9);
  EXPECT_NEAR(report->retest.spearman, 1.0, 1e-9);
  EXPECT_THAT(
      RetestSummary(*report),
      StartsWith("re-measured (even rounds against odd rounds): MAPE 40.0%"));
  // The fastest round (1.0) as another statistic: every prediction right.
  ASSERT_EQ(report->other_statistics.size(), 2u);
  EXPECT_EQ(report->other_statistics[0].statistic, RoundStatistic::kFastest);
  EXPECT_NEAR(report->other_statistics[0].stats.mape, 0, 1e-9);
  EXPECT_THAT(OtherStatisticSummary(*report, report->other_statistics[0]),
              StartsWith("with the fastest round instead of the median of "
                         "the rounds: MAPE 0.0%"));
  EXPECT_THAT(FidelityTableMarkdown(*report), HasSubstr(" / "));

  options_.rounds = 0;
  EXPECT_THAT(Run().status().message(),
              HasSubstr("rounds must be >= 1, got 0"));
}

TEST(RunFidelityTest, PoolsTheStepsOfAllRounds) {
  // Real execution times steps: here four a round, one undisturbed (1.0 in
  // round 1, 1.2 in round 2) and three 2x slow. Each round's median is
  // 2x; the fastest quarter of the eight steps of both rounds is 1.1x.
  const SmallRnnlm rnnlm;
  FidelityOptions options;
  options.samples = 8;
  options.placers = {};
  options.rounds = 2;
  const int n =
      static_cast<int>(FidelityPlacements(rnnlm.problem, options).size());
  ScaledEnvironment env(
      rnnlm.cost, [](const Placement&) { return 1.0; },
      [n, calls = 0](const Placement&) mutable -> std::vector<double> {
        return calls++ < n ? std::vector<double>{1.0, 2, 2, 2}
                           : std::vector<double>{2, 2, 2, 1.2};
      });
  StatusOr<FidelityReport> report = RunFidelity(rnnlm.problem, &env, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_TRUE(report->pooled_steps);
  const FidelitySample& s = report->samples[0];
  EXPECT_EQ(s.step_times.size(), 8u);
  ASSERT_EQ(s.round_step_times.size(), 2u);
  EXPECT_NEAR(s.round_step_times[1], 2 * s.simulated, 1e-12);
  EXPECT_NEAR(s.measured.step_time, 1.1 * s.simulated, 1e-12);
  EXPECT_NEAR(report->stats.mape, 0.1 / 1.1, 1e-9);
  // Round 2's fastest quarter (1.2) against round 1's (1.0).
  EXPECT_EQ(report->retest.count, n);
  EXPECT_NEAR(report->retest.mape, 0.2, 1e-9);
  // The fastest step is 1.0x, the median step 2x.
  ASSERT_EQ(report->other_statistics.size(), 2u);
  EXPECT_NEAR(report->other_statistics[0].stats.mape, 0, 1e-9);
  EXPECT_NEAR(report->other_statistics[1].stats.mape, 0.5, 1e-9);
  EXPECT_THAT(OtherStatisticSummary(*report, report->other_statistics[1]),
              StartsWith("with the median of the steps instead of the mean "
                         "of the fastest quarter of the steps: MAPE 50.0%"));
  EXPECT_THAT(
      FidelityTableMarkdown(*report),
      HasSubstr("| measured (s, the mean of the fastest quarter of the steps) "
                "|"));
}

TEST(RunFidelityTest, SamePlacementsForTheSameSeed) {
  const SmallRnnlm rnnlm;
  const PlacementProblem& problem = rnnlm.problem;
  FidelityOptions options;
  options.samples = 10;
  options.placers = {"no-such-placer", "m-etf"};  // The unknown one skipped.
  const auto a = FidelityPlacements(problem, options);
  const auto b = FidelityPlacements(problem, options);
  ASSERT_EQ(a.size(), 10u);
  EXPECT_EQ(a[2].label, "m-etf");
  EXPECT_EQ(a[3].label, "cut at 25% of the ops");
  EXPECT_EQ(a[5].label, "cut at 75% of the ops");
  EXPECT_EQ(a[6].label, "random per group #1");
  EXPECT_EQ(a[7].label, "random per op #1");
  // A cut puts a prefix of the topological order on cpu:0, the rest on
  // cpu:1.
  const std::vector<OpId>& topo = rnnlm.graph.topological_order();
  EXPECT_EQ(a[4].placement[topo.front()], 0);
  EXPECT_EQ(a[4].placement[topo.back()], 1);
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(a[i].placement, b[i].placement);
  options.seed = 2;
  EXPECT_NE(FidelityPlacements(problem, options)[6].placement, a[6].placement);
}

TEST(PlacementFileNameTest, EveryLabelGetsAPlainDistinctName) {
  EXPECT_EQ(PlacementFileName("random per group #3"),
            "random-per-group-3.json");
  EXPECT_EQ(PlacementFileName("single cpu:0"), "single-cpu-0.json");
  EXPECT_EQ(PlacementFileName("single cuda:0"), "single-cuda-0.json");
  EXPECT_EQ(PlacementFileName("cut at 25% of the ops"),
            "cut-at-25pct-of-the-ops.json");
  EXPECT_EQ(PlacementFileName("m-etf"), "m-etf.json");
  EXPECT_EQ(PlacementFileName(" ../#"), "placement.json");
}

}  // namespace
}  // namespace dplace
