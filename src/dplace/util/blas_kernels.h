// OpenBLAS's choice of kernels for the CPU it runs on.
#ifndef DPLACE_UTIL_BLAS_KERNELS_H_
#define DPLACE_UTIL_BLAS_KERNELS_H_

namespace dplace {

// OpenBLAS picks its kernels by CPU model when it loads, and Debian 12's
// (0.3.21) takes its generic Prescott (SSE3) kernels on models newer than
// it knows, such as Intel's Xeon of model 207 (Emerald Rapids): there every
// matrix product of LibTorch and of the learned placers runs at a third of
// the speed of OpenBLAS's AVX-512 kernels. OpenBLAS reads the variable
// OPENBLAS_CORETYPE only as it loads, so when it chose Prescott on a CPU
// with AVX2 (its Haswell kernels) or AVX-512 (SkylakeX), this sets the
// variable and runs the program again (`argv`, through /proc/self/exe).
// It returns, doing nothing, when the variable is set already, when
// OpenBLAS is not loaded or chose other kernels, and when the new start
// fails. Call it first thing in main.
void UseFastBlasKernels(char** argv);

}  // namespace dplace

#endif  // DPLACE_UTIL_BLAS_KERNELS_H_
