#include <cstring>
#include <iostream>

#include "dplace/cli/cli.h"
#include "dplace/util/blas_kernels.h"

namespace {

// The commands whose work is matrix products (learned placers, Mars's
// pre-training, real execution). Only they start again for OpenBLAS's fast
// kernels, which costs a second load of LibTorch (0.6 s on the development
// machine).
bool RunsMatrixProducts(int argc, char** argv) {
  if (argc < 2) return false;
  for (const char* command :
       {"place", "bench", "pretrain", "profile", "measure", "fidelity"}) {
    if (std::strcmp(argv[1], command) == 0) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (RunsMatrixProducts(argc, argv)) dplace::UseFastBlasKernels(argv);
  return dplace::RunCli(argc, argv, std::cout, std::cerr);
}
