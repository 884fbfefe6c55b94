#include "dplace/graph/parameters.h"

#include <string>
#include <unordered_set>

#include "dplace/graph/training.h"

namespace dplace {
namespace {

bool IsFloatingPoint(DataType type) {
  return type == DataType::kFloat32 || type == DataType::kFloat16 ||
         type == DataType::kBFloat16 || type == DataType::kFloat64;
}

}  // namespace

ParameterCounts CountParameters(const Graph& g) {
  std::unordered_set<std::string> updated;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    if (g.phase(op) == Phase::kUpdate) updated.insert(g.colocation_group(op));
  }
  ParameterCounts counts;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    const bool variable = g.op_type(op) == kParameterOpType;
    if ((!variable && g.op_type(op) != "Const") || g.num_outputs(op) == 0) {
      continue;
    }
    const TensorInfo& t = g.tensor(g.output(op, 0));
    if (!variable &&
        (g.persistent_bytes(op) == 0 || !IsFloatingPoint(t.dtype))) {
      continue;  // A constant of the computation (shapes, indices).
    }
    const std::string& group = g.colocation_group(op);
    const bool trained = variable && !group.empty() && updated.count(group);
    ParameterCounts::Tally& tally = trained ? counts.trained : counts.untrained;
    ++tally.tensors;
    tally.elements += t.bytes / DataTypeSize(t.dtype);
    tally.bytes += t.bytes;
  }
  return counts;
}

}  // namespace dplace
