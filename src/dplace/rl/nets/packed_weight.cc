#include "dplace/rl/nets/packed_weight.h"

#include <algorithm>
#include <stdexcept>

#include "dplace/rl/nets/fast_math.h"

namespace dplace {
namespace {

constexpr int64_t kPanel = 32;
constexpr int kMaxGroupRows = 8;

// The `R` rows' products with every panel: for each panel, the sums of its
// 32 columns for each row stay in registers (R x 32 floats: 2R AVX-512
// registers) while the panel streams past once.
template <int R>
inline __attribute__((always_inline)) void PanelRows(
    int64_t panels, int64_t inputs, int64_t outputs,
    const float* __restrict weight, const float* __restrict x, int64_t ldx,
    float* __restrict out, int64_t ldo, bool accumulate) {
  for (int64_t p = 0; p < panels; ++p) {
    const float* panel = weight + p * inputs * kPanel;
    float sums[R][kPanel] = {};
    for (int64_t i = 0; i < inputs; ++i) {
      const float* w = panel + i * kPanel;
      for (int r = 0; r < R; ++r) {
        const float v = x[r * ldx + i];
#pragma omp simd
        for (int j = 0; j < kPanel; ++j) sums[r][j] += v * w[j];
      }
    }
    const int64_t first = p * kPanel;
    const int64_t width = std::min(kPanel, outputs - first);
    for (int r = 0; r < R; ++r) {
      float* o = out + r * ldo + first;
      if (accumulate) {
        for (int64_t j = 0; j < width; ++j) o[j] += sums[r][j];
      } else {
        for (int64_t j = 0; j < width; ++j) o[j] = sums[r][j];
      }
    }
  }
}

DPLACE_VECTOR_CLONES
void GroupProducts(int rows, int64_t panels, int64_t inputs, int64_t outputs,
                   const float* weight, const float* x, int64_t ldx, float* out,
                   int64_t ldo, bool accumulate) {
  switch (rows) {
#define DPLACE_PANEL_ROWS(R)                                        \
  case R:                                                           \
    PanelRows<R>(panels, inputs, outputs, weight, x, ldx, out, ldo, \
                 accumulate);                                       \
    return;
    DPLACE_PANEL_ROWS(1)
    DPLACE_PANEL_ROWS(2)
    DPLACE_PANEL_ROWS(3)
    DPLACE_PANEL_ROWS(4)
    DPLACE_PANEL_ROWS(5)
    DPLACE_PANEL_ROWS(6)
    DPLACE_PANEL_ROWS(7)
    DPLACE_PANEL_ROWS(8)
#undef DPLACE_PANEL_ROWS
  }
}

}  // namespace

PackedWeight PackWeight(const torch::Tensor& b) {
  if (b.dim() != 2 || b.scalar_type() != torch::kFloat32 ||
      !b.device().is_cpu()) {
    throw std::invalid_argument("PackWeight: a float32 CPU matrix expected");
  }
  torch::NoGradGuard no_grad;
  const int64_t inputs = b.size(0), outputs = b.size(1);
  const int64_t panels = (outputs + kPanel - 1) / kPanel;
  torch::Tensor padded = b;
  if (panels * kPanel != outputs) {
    padded = torch::constant_pad_nd(b, {0, panels * kPanel - outputs});
  }
  PackedWeight w;
  w.panels =
      padded.view({inputs, panels, kPanel}).permute({1, 0, 2}).contiguous();
  w.outputs = outputs;
  return w;
}

bool WorthPacking(const torch::Tensor& w, int64_t rows, int64_t steps) {
  return w.numel() >= (int64_t{1} << 18) && rows >= 2 &&
         rows <= 2 * kMaxGroupRows && steps >= 4;
}

void PackedProducts(const PackedWeight& w, const float* x, int64_t ldx,
                    int64_t rows, float* out, int64_t ldo, bool accumulate) {
  const int64_t panels = w.panels.size(0), inputs = w.inputs();
  const float* weight = w.panels.data_ptr<float>();
  // Groups of equal size: 10 rows as 5 + 5 rather than 8 + 2.
  const int64_t groups = (rows + kMaxGroupRows - 1) / kMaxGroupRows;
  for (int64_t first = 0, g = 0; g < groups; ++g) {
    const int64_t n = (rows - first) / (groups - g);
    GroupProducts(static_cast<int>(n), panels, inputs, w.outputs, weight,
                  x + first * ldx, ldx, out + first * ldo, ldo, accumulate);
    first += n;
  }
}

}  // namespace dplace
