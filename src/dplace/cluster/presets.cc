// Hardware presets: the papers' machines and a modern multi-host one.
//
// Figures are vendors' published peaks (fp32, no tensor cores) unless said
// otherwise; the cost model applies efficiencies on top. Where a paper does
// not name a part, the assumption is stated next to it.
#include <functional>
#include <string>

#include "dplace/cluster/cluster.h"

namespace dplace {
namespace {

constexpr double kGB = 1e9;
constexpr int64_t kGiB = int64_t{1} << 30;

// PCIe 3.0 x16: 15.75 GB/s raw, about 12 GB/s achieved by cudaMemcpy;
// ~10 us per transfer through the TensorFlow send/recv path (DESIGN.md).
constexpr double kPcie3Bandwidth = 12 * kGB;
constexpr double kPcie3Latency = 10e-6;

// Launch overheads: TensorFlow's executor plus a CUDA launch is a few
// microseconds per GPU op; a CPU op pays the executor only. Assumptions of
// ours, to be replaced by `dplace profile` measurements.
constexpr double kGpuLaunch2018 = 8e-6;
constexpr double kCpuLaunch = 4e-6;

// A CPU runs a few ops at once (TensorFlow's inter-op pool) while each op
// also spreads over cores (intra-op pool): modelled as 2 slots with half the
// chip each.
constexpr int kCpuSlots = 2;

// Broadwell 8-core of Post's Google Cloud machines (Post §5: "an Intel
// Broadwell 8-core CPU", 26 GB of main memory). Clock assumed 2.2 GHz (Xeon
// E5-2699 v4, GCE's Broadwell part): 8 cores x 2.2 GHz x 32 fp32 FLOP/cycle
// (two AVX2 FMA units) = 563 GFLOP/s; 4 channels DDR4-2400 = 76.8 GB/s.
Device Broadwell8() {
  return {"cpu:0",
          DeviceKind::kCpu,
          "host0",
          "Intel Broadwell 8-core",
          8 * 2.2e9 * 32,
          76.8 * kGB,
          26 * int64_t{1000000000},
          kCpuLaunch,
          kCpuSlots};
}

// Tesla K80, one of its two GK210 GPUs: 8.73 TFLOP/s fp32 per board with GPU
// Boost and 480 GB/s per board (NVIDIA K80 datasheet), halved per GPU.
// Memory: Post §5, "each with 11 GB of memory".
Device K80() {
  return {"",      DeviceKind::kGpu, "host0",   "Tesla K80 (one GK210)",
          4.37e12, 240 * kGB,        11 * kGiB, kGpuLaunch2018,
          1};
}

// "1 Intel Haswell 2300 CPU" (Hierarchical Planner §4). Assumed Xeon
// E5-2698 v3: 16 cores x 2.3 GHz x 32 fp32 FLOP/cycle = 1.18 TFLOP/s; 4
// channels DDR4-2133 = 68 GB/s. Host memory is not given: assumed 64 GB.
Device Haswell2300() {
  return {"cpu:0",
          DeviceKind::kCpu,
          "host0",
          "Intel Haswell 2.3 GHz",
          16 * 2.3e9 * 32,
          68 * kGB,
          64 * int64_t{1000000000},
          kCpuLaunch,
          kCpuSlots};
}

// Tesla K40: 4.29 TFLOP/s fp32 peak, 288 GB/s, 12 GB GDDR5 (NVIDIA K40
// datasheet).
Device K40() {
  return {"",
          DeviceKind::kGpu,
          "host0",
          "Tesla K40",
          4.29e12,
          288 * kGB,
          12 * int64_t{1000000000},
          kGpuLaunch2018,
          1};
}

// "2 Intel E5-2650 v4 Broadwell @ 2.2GHz CPUs and 125GB memory" (EAGLE
// §5.1): 2 x 12 cores x 2.2 GHz x 32 = 1.69 TFLOP/s; 2 x 76.8 GB/s. One
// device with one slot per socket.
Device TwoE5_2650v4() {
  return {"cpu:0",
          DeviceKind::kCpu,
          "host0",
          "2x Intel Xeon E5-2650 v4",
          2 * 12 * 2.2e9 * 32,
          2 * 76.8 * kGB,
          125 * int64_t{1000000000},
          kCpuLaunch,
          kCpuSlots};
}

// Tesla P100 PCIe 16 GB: 9.3 TFLOP/s fp32, 732 GB/s HBM2 (NVIDIA P100
// datasheet).
Device P100() {
  return {"",
          DeviceKind::kGpu,
          "host0",
          "Tesla P100 PCIe 16GB",
          9.3e12,
          732 * kGB,
          16 * int64_t{1000000000},
          kGpuLaunch2018,
          1};
}

// One host: a CPU and `num_gpus` GPUs, each GPU on PCIe 3.0 to the CPU and
// to every other GPU (peer to peer).
StatusOr<Cluster> SingleHostPcie(const std::string& name, Device cpu,
                                 const Device& gpu, int num_gpus) {
  ClusterBuilder b(name);
  b.AddDevice(std::move(cpu));
  for (int i = 0; i < num_gpus; ++i) {
    Device g = gpu;
    g.name = "gpu:" + std::to_string(i);
    b.AddDevice(g);
    b.AddLink("cpu:0", g.name, kPcie3Bandwidth, kPcie3Latency);
    for (int j = 0; j < i; ++j) {
      b.AddLink("gpu:" + std::to_string(j), g.name, kPcie3Bandwidth,
                kPcie3Latency);
    }
  }
  return std::move(b).Build();
}

// DGX H100 hosts (NVIDIA DGX H100 user guide and H100 datasheet):
// - H100 SXM5: 67 TFLOP/s fp32 (no tensor cores), 3.35 TB/s HBM3, 80 GB.
// - NVLink 4 through NVSwitch: 900 GB/s per GPU both ways, so 450 GB/s per
//   direction; modelled as a channel per GPU pair (which overstates a GPU
//   sending to several peers at once). Latency assumed 3 us.
// - One ConnectX-7 400 Gb/s (50 GB/s) NIC per GPU, rail-optimised: GPU i of
//   every host on rail i. Latency assumed 5 us (GPUDirect RDMA).
// - 2x Xeon Platinum 8480C: 2 x 56 cores x 2.0 GHz x 64 fp32 FLOP/cycle
//   (two AVX-512 FMA units) = 14.3 TFLOP/s; 2 x 8 channels DDR5-4800 =
//   614 GB/s; 2 TB. PCIe 5.0 x16 to each GPU: ~50 GB/s achieved, 10 us.
// - Hosts' CPUs talk over a 200 Gb/s (25 GB/s) in-band port, 10 us.
StatusOr<Cluster> DgxH100(const std::string& name, int num_hosts) {
  ClusterBuilder b(name);
  auto host_name = [&](int h) {
    return num_hosts == 1 ? std::string() : "h" + std::to_string(h) + "/";
  };
  for (int h = 0; h < num_hosts; ++h) {
    const std::string prefix = host_name(h);
    const std::string host = "host" + std::to_string(h);
    b.AddDevice({prefix + "cpu:0", DeviceKind::kCpu, host,
                 "2x Intel Xeon Platinum 8480C", 2 * 56 * 2.0e9 * 64, 614 * kGB,
                 2000 * int64_t{1000000000}, kCpuLaunch, kCpuSlots});
    for (int i = 0; i < 8; ++i) {
      const std::string gpu = prefix + "gpu:" + std::to_string(i);
      b.AddDevice({gpu, DeviceKind::kGpu, host, "H100 SXM5 80GB", 67e12,
                   3350 * kGB, 80 * int64_t{1000000000}, 4e-6, 1});
      b.AddLink(prefix + "cpu:0", gpu, 50 * kGB, 10e-6);
      for (int j = 0; j < i; ++j) {
        b.AddLink(prefix + "gpu:" + std::to_string(j), gpu, 450 * kGB, 3e-6);
      }
      for (int g = 0; g < h; ++g) {
        b.AddLink(host_name(g) + "gpu:" + std::to_string(i), gpu, 50 * kGB,
                  5e-6);
      }
    }
    for (int g = 0; g < h; ++g) {
      b.AddLink(host_name(g) + "cpu:0", prefix + "cpu:0", 25 * kGB, 10e-6);
    }
  }
  return std::move(b).Build();
}

struct Preset {
  const char* name;
  const char* description;
  std::function<StatusOr<Cluster>()> make;
};

const std::vector<Preset>& Presets() {
  static const auto* presets = new std::vector<Preset>{
      {"k80x2", "Broadwell 8-core + 2 Tesla K80 (Post)",
       [] { return SingleHostPcie("k80x2", Broadwell8(), K80(), 2); }},
      {"k80x4", "Broadwell 8-core + 4 Tesla K80 (Post)",
       [] { return SingleHostPcie("k80x4", Broadwell8(), K80(), 4); }},
      {"k80x8", "Broadwell 8-core + 8 Tesla K80 (Post)",
       [] { return SingleHostPcie("k80x8", Broadwell8(), K80(), 8); }},
      {"k40x2", "Haswell 2.3 GHz + 2 Tesla K40 (Hierarchical Planner)",
       [] { return SingleHostPcie("k40x2", Haswell2300(), K40(), 2); }},
      {"k40x4", "Haswell 2.3 GHz + 4 Tesla K40 (Hierarchical Planner)",
       [] { return SingleHostPcie("k40x4", Haswell2300(), K40(), 4); }},
      {"k40x8", "Haswell 2.3 GHz + 8 Tesla K40 (Hierarchical Planner)",
       [] { return SingleHostPcie("k40x8", Haswell2300(), K40(), 8); }},
      {"p100x4", "2x Xeon E5-2650 v4 + 4 Tesla P100 PCIe (EAGLE, Mars)",
       [] { return SingleHostPcie("p100x4", TwoE5_2650v4(), P100(), 4); }},
      {"h100x8", "DGX H100: 2x Xeon 8480C + 8 H100 SXM5, NVLink",
       [] { return DgxH100("h100x8", 1); }},
      {"h100x8x2",
       "2 DGX H100 hosts: 16 H100, NVLink inside, InfiniBand "
       "between (rail-optimised)",
       [] { return DgxH100("h100x8x2", 2); }},
  };
  return *presets;
}

}  // namespace

std::vector<std::string> ClusterPresetNames() {
  std::vector<std::string> names;
  for (const Preset& p : Presets()) names.push_back(p.name);
  return names;
}

std::string ClusterPresetDescription(std::string_view name) {
  for (const Preset& p : Presets()) {
    if (p.name == name) return p.description;
  }
  return "";
}

StatusOr<Cluster> MakeClusterPreset(std::string_view name) {
  for (const Preset& p : Presets()) {
    if (p.name == name) return p.make();
  }
  std::string known;
  for (const Preset& p : Presets()) {
    known += known.empty() ? "" : ", ";
    known += p.name;
  }
  return NotFoundError("unknown cluster preset \"" + std::string(name) +
                       "\" (presets: " + known + ")");
}

}  // namespace dplace
