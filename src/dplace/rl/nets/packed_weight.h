// A weight matrix laid out once for many products with a few rows: the
// recurrences' steps, x_t [B, K] times the same weight at every step for
// B = 1 to 10 placements.
//
// OpenBLAS 0.3.21 has no routine that keeps a weight in its kernels' layout
// between calls (MKL's sgemm_pack has): its sgemm copies the whole weight
// into that layout on every call, and its sgemv reads the weight once per
// row. At a step's few rows both cost more than the arithmetic. A packed
// weight is cut into panels of 32 output columns, each stored as one
// contiguous [K, 32] block, and PackedProducts reads every panel once for
// all rows, keeping the rows' 32 sums of a panel in vector registers.
// Measured on an Intel Xeon (model 207, 2 MB L2, one thread, us per product;
// OpenBLAS sgemv per row, in 128 KB blocks of the weight above 2 MB /
// packed; rl_benchmark --benchmark_filter=RowProducts):
//   2 x [1024, 256]^T 27.6 / 18.4;  5 x [1024, 256]^T 68.5 / 17.7;
//   5 x [2048, 512]^T 355 / 143;    5 x [2048, 1024]^T 695 / 315.
// (For 5 x [2048, 1024]^T a scratch program measured OpenBLAS's sgemm at
// 1,146 us, oneDNN's inner product through LibTorch at 1,109 us and
// at::linear at 711 us.)
#ifndef DPLACE_RL_NETS_PACKED_WEIGHT_H_
#define DPLACE_RL_NETS_PACKED_WEIGHT_H_

#include <torch/torch.h>

#include <cstdint>

namespace dplace {

struct PackedWeight {
  torch::Tensor panels;  // [ceil(outputs / 32), inputs, 32], zero-padded.
  int64_t outputs = 0;

  bool defined() const { return panels.defined(); }
  int64_t inputs() const { return panels.size(1); }
};

// `b` [inputs, outputs] (any strides, float32, CPU; e.g. w.t() for the
// products x w^T) in panels. A copy of the weight: it pays off from a few
// products on.
PackedWeight PackWeight(const torch::Tensor& b);

// Whether a recurrence of `steps` steps of `rows` rows with the weight
// `w` (either orientation) runs faster with it packed: a weight large
// enough that reading it dominates a step (2^18 elements or more, 1 MB),
// up to 16 rows (two groups; more rows amortise sgemm's own copy) and
// enough steps to repay the packing.
bool WorthPacking(const torch::Tensor& w, int64_t rows, int64_t steps);

// out[r] = x[r] b (or out[r] += x[r] b, `accumulate`) for the `rows` rows
// of x (row r at x + r * ldx, `w.inputs()` floats) and of out (at
// out + r * ldo, `w.outputs` floats). Any number of rows, in groups of up
// to 8 (each group reads the weight once).
void PackedProducts(const PackedWeight& w, const float* x, int64_t ldx,
                    int64_t rows, float* out, int64_t ldo, bool accumulate);

}  // namespace dplace

#endif  // DPLACE_RL_NETS_PACKED_WEIGHT_H_
