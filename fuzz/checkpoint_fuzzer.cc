// libFuzzer entry point for the search checkpoint (see checkpoint_target.h).
#include "fuzz/checkpoint_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dplace::fuzz::FuzzCheckpoint(data, size);
  return 0;
}
