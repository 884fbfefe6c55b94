// libFuzzer entry point for the onnx import parser (see fuzz_targets.h).
#include "fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dplace::fuzz::FuzzOnnxImport(data, size);
  return 0;
}
