// libFuzzer entry point for the graph json parser (see fuzz_targets.h).
#include "fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dplace::fuzz::FuzzGraphJson(data, size);
  return 0;
}
