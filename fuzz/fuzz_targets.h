// The parser fuzz targets, shared by the libFuzzer binaries (fuzz/*_fuzzer.cc)
// and by fuzz_regression_test, which replays the seeds and every input that
// once crashed (testdata/fuzz-regressions/<target>/) in the normal build.
//
// Each target feeds one input to a parser the way dplace reads a file, and
// aborts when a property that must hold for every input fails: whatever
// parses must survive a write and a second read unchanged. Errors returned
// as Status are the expected outcome for most inputs.
#ifndef DPLACE_FUZZ_FUZZ_TARGETS_H_
#define DPLACE_FUZZ_FUZZ_TARGETS_H_

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>
#include <vector>

namespace dplace {
namespace fuzz {

void FuzzGraphJson(const uint8_t* data, size_t size);
void FuzzClusterJson(const uint8_t* data, size_t size);
// Placements for examples/mlp_training.json on the k80x2 preset (the graph
// and cluster the placement fixtures are bound to).
void FuzzPlacementJson(const uint8_t* data, size_t size);
void FuzzProfileJson(const uint8_t* data, size_t size);
// ImportOnnxBytes, then the graph JSON round trip of what it imported.
void FuzzOnnxImport(const uint8_t* data, size_t size);

struct FuzzTarget {
  std::string_view name;  // Folder name under testdata/fuzz-regressions/.
  void (*run)(const uint8_t* data, size_t size);
};
const std::vector<FuzzTarget>& FuzzTargets();

// For test names: the target's name.
inline void PrintTo(const FuzzTarget& target, std::ostream* os) {
  *os << target.name;
}

}  // namespace fuzz
}  // namespace dplace

#endif  // DPLACE_FUZZ_FUZZ_TARGETS_H_
