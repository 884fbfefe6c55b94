// The input format of Tarnawski et al., "Efficient Algorithms for Device
// Placement of DNN Graph Operators" (NeurIPS 2020): a graph whose nodes
// carry their latency on a CPU and on an accelerator, their memory size and
// a colocation class, whose edges carry the time to move the source's
// output between an accelerator and host memory, and the machine: k
// accelerators of one memory size and l CPU cores (docs/formats.md).
//
// dplace reads it as a problem of its own: a graph (one op per node, one
// output tensor per node), a profile (every op's time on each device kind)
// and a cluster (a CPU of l slots with unbounded memory and k "gpu"
// accelerators, each linked to the CPU only, so accelerator-to-accelerator
// tensors go through host memory and pay two hops, as in the paper).
// Units: 1 time unit of the file = 1 ms; a transfer's cost becomes the
// tensor's bytes over links of kTarnawskiBytesPerSecond, so 1 byte = 1 us.
#ifndef DPLACE_IO_TARNAWSKI_JSON_H_
#define DPLACE_IO_TARNAWSKI_JSON_H_

#include <string>
#include <vector>

#include "dplace/cost/cost_model.h"
#include "dplace/graph/placement.h"
#include "dplace/io/file.h"

namespace dplace {

// Seconds per time unit of the format (milliseconds).
inline constexpr double kTarnawskiSecondsPerUnit = 1e-3;
// Link bandwidth of the cluster: a tensor of b bytes takes b microseconds
// per hop, so transfer costs keep 1 us of resolution while the tensors
// stay small beside the accelerators' memory.
inline constexpr double kTarnawskiBytesPerSecond = 1e6;

struct TarnawskiProblem {
  Graph graph;
  ProfileTable profile;  // By op name: every op's cpu (and gpu) time.
  Cluster cluster;
  // What the file says, for checks: node and edge counts, the sum of the
  // nodes' sizes, the accelerators' memory and count.
  int num_nodes = 0;
  int num_edges = 0;
  double total_size_bytes = 0;
  double accelerator_bytes = 0;
  int accelerators = 0;
  int cpu_cores = 0;
  // The file's node ids in op order (op i is the node of id node_ids[i]).
  std::vector<int64_t> node_ids;
};

// Whether `text` is a document of this format (an object with
// "maxSizePerFPGA" and "nodes"), for callers that sniff a .json file.
bool LooksLikeTarnawskiJson(const std::string& text);

// Parses a document; errors name `source`, the JSON path and what was
// expected. `name` names the graph and the cluster ("tarnawski-" + name).
StatusOr<TarnawskiProblem> ParseTarnawskiJson(const std::string& text,
                                              const std::string& source,
                                              const std::string& name);
StatusOr<TarnawskiProblem> ReadTarnawskiJson(const std::string& path,
                                             const FileLimits& limits = {});

// A human-expert split of the same repository ({"fpgas": [{"nodes":
// [ids]}], "cpus": [...]}) as a placement of `problem`: the i-th
// accelerator entry on the cluster's i-th accelerator, the CPU entries and
// every node the split does not name on the CPU. Errors: an unknown id,
// more accelerator entries than the cluster has.
StatusOr<Placement> ReadTarnawskiSplit(const std::string& path,
                                       const TarnawskiProblem& problem);

}  // namespace dplace

#endif  // DPLACE_IO_TARNAWSKI_JSON_H_
