// Times importing the ResNet-50 ONNX fixture (testdata/onnx/resnet50.onnx,
// batch 32): parsing, shape inference and graph building; and the same plus
// the training expansion with Adam, as `dplace import` runs them.
//
//   build/onnx_import_benchmark
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "dplace/graph/training.h"
#include "dplace/io/file.h"
#include "dplace/io/onnx/onnx_import.h"

namespace dplace {
namespace {

const std::string& ResNet50Bytes() {
  static const std::string* bytes = [] {
    StatusOr<std::string> b = ReadTextFile(std::string(DPLACE_SOURCE_DIR) +
                                           "/testdata/onnx/resnet50.onnx");
    if (!b.ok()) std::abort();
    return new std::string(std::move(b).value());
  }();
  return *bytes;
}

void BM_ImportResNet50(benchmark::State& state) {
  OnnxImportOptions options;
  options.batch = 32;
  for (auto _ : state) {
    StatusOr<OnnxImport> imported =
        ImportOnnxBytes(ResNet50Bytes(), "resnet50.onnx", options);
    if (!imported.ok())
      state.SkipWithError(imported.status().message().c_str());
    benchmark::DoNotOptimize(imported);
  }
}
BENCHMARK(BM_ImportResNet50)->Unit(benchmark::kMillisecond);

void BM_ImportAndExpandResNet50(benchmark::State& state) {
  OnnxImportOptions options;
  options.batch = 32;
  TrainingOptions training;
  training.optimizer = Optimizer::kAdam;
  for (auto _ : state) {
    StatusOr<OnnxImport> imported =
        ImportOnnxBytes(ResNet50Bytes(), "resnet50.onnx", options);
    if (!imported.ok()) {
      state.SkipWithError(imported.status().message().c_str());
      break;
    }
    StatusOr<Graph> graph = ExpandForTraining(imported->forward, training);
    benchmark::DoNotOptimize(graph);
  }
}
BENCHMARK(BM_ImportAndExpandResNet50)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dplace
