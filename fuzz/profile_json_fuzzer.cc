// libFuzzer entry point for the profile json parser (see fuzz_targets.h).
#include "fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dplace::fuzz::FuzzProfileJson(data, size);
  return 0;
}
