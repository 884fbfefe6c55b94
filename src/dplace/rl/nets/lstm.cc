#include "dplace/rl/nets/lstm.h"

#include <ATen/record_function.h>
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "dplace/rl/nets/attention.h"
#include "dplace/rl/nets/fast_math.h"
#include "dplace/rl/nets/packed_weight.h"

namespace dplace {
namespace {

// A product of a few rows with a large weight matrix runs as BLAS
// matrix-vector products. OpenBLAS's sgemm packs the whole weight matrix on
// every call, which at a recurrence step's rows costs more than the
// arithmetic. Measured on an AMD EPYC (one thread, us per product, sgemm /
// per-row sgemv):
//   4 rows x [1024, 256]^T: 65 / 33;  4 x [2048, 512]^T: 294 / 132;
//   10 x [1024, 256]^T: 94 / 88;  4 x [256, 512]^T: 11 / 15;
//   4 x [128, 256]^T: 3.4 / 6.6 (OpenBLAS's small-matrix kernels, no packing).
constexpr int64_t kMaxVectorProductRows = 8;
constexpr int64_t kMinVectorProductWeights = 1 << 18;
// A weight of more than kMinBlockedWeights elements (more than a core's L2
// holds beside the rest of a step) is read in blocks of its rows of about
// kWeightBlockBytes, each block by every row of x in turn, so that it comes
// from L3 or memory once and from L2 for the other rows. On an Intel Xeon
// (model 207, 2 MB L2, OpenBLAS's SkylakeX kernels; us per product, sgemm /
// per-row sgemv / in blocks of 128 KB): 5 x [2048, 1024]^T 1470 / 1556 /
// 807; 4 x [2048, 512]^T 511 / 653 / 355; 2 x [2048, 1024]^T 1127 / 620 /
// 491. Smaller weights stay in L2 anyway, and their blocks cost more calls:
// the agents with 1 MB weights (colocrl, Mars) lost 10-15% with them.
constexpr int64_t kMinBlockedWeights = 1 << 19;
constexpr int64_t kWeightBlockBytes = 128 << 10;

// A float32 CPU matrix whose rows are contiguous vectors (a slice of
// columns of a contiguous matrix is one).
bool RowsAreVectors(const torch::Tensor& t) {
  return t.dim() == 2 && t.stride(1) == 1 && t.stride(0) >= t.size(1) &&
         t.scalar_type() == torch::kFloat32 && t.device().is_cpu();
}

// out [B, N] = x [B, K] W^T + (accumulate ? out : 0), W [N, K]; or, with
// `transposed_w`, out [B, K] = x [B, N] W + ... . No gradient. `out` is
// contiguous. `packed` (when defined): the same weight packed for this
// orientation (W^T, or W with `transposed_w`), which is then used.
void AddProducts(const torch::Tensor& x, const torch::Tensor& w,
                 bool transposed_w, bool accumulate, torch::Tensor& out,
                 const PackedWeight* packed = nullptr) {
  const int64_t rows = x.size(0);
  if (packed != nullptr && packed->defined() && out.is_contiguous()) {
    if (packed->inputs() != x.size(1) || packed->outputs != out.size(1) ||
        out.size(0) != rows) {
      throw std::invalid_argument("row products: packed weight of other shape");
    }
    RECORD_FUNCTION("dplace::row_products", std::vector<c10::IValue>({x, w}));
    const torch::Tensor in = x.stride(1) == 1 ? x : x.contiguous();
    PackedProducts(*packed, in.data_ptr<float>(), in.stride(0), rows,
                   out.data_ptr<float>(), out.size(1), accumulate);
    return;
  }
  if (rows > kMaxVectorProductRows || w.numel() < kMinVectorProductWeights ||
      !RowsAreVectors(x) || !RowsAreVectors(w) || !out.is_contiguous()) {
    const torch::Tensor rhs = transposed_w ? w : w.t();
    if (accumulate) {
      out.addmm_(x, rhs);
    } else {
      at::mm_out(out, x, rhs);
    }
    return;
  }
  // Named for profilers and rl_benchmark's FLOP count: 2 x rows x numel(w).
  RECORD_FUNCTION("dplace::row_products", std::vector<c10::IValue>({x, w}));
  const int n = static_cast<int>(w.size(0)), k = static_cast<int>(w.size(1));
  const int lda = static_cast<int>(w.stride(0));
  const int out_size = transposed_w ? k : n;
  const int block =
      rows == 1 || w.numel() <= kMinBlockedWeights
          ? n
          : static_cast<int>(std::max<int64_t>(
                1, kWeightBlockBytes / (static_cast<int64_t>(lda) * 4)));
  const float* a = w.data_ptr<float>();
  const float* in = x.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int first = 0; first < n; first += block) {
    const int m = std::min(block, n - first);
    const float* a_block = a + static_cast<int64_t>(first) * lda;
    for (int64_t r = 0; r < rows; ++r) {
      const float* x_row = in + r * x.stride(0);
      float* out_row = o + r * out_size;
      if (transposed_w) {  // out_row += x_row[first, first + m) a_block.
        cblas_sgemv(CblasRowMajor, CblasTrans, m, k, 1.0f, a_block, lda,
                    x_row + first, 1, accumulate || first > 0 ? 1.0f : 0.0f,
                    out_row, 1);
      } else {  // out_row[first, first + m) = a_block x_row (+ itself).
        cblas_sgemv(CblasRowMajor, CblasNoTrans, m, k, 1.0f, a_block, lda,
                    x_row, 1, accumulate ? 1.0f : 0.0f, out_row + first, 1);
      }
    }
  }
}

// The gates' activations and the new state of one LSTM step. `gates` [B,
// 4H] holds the pre-activations (i, f, g, o) and gets the activations;
// `c_prev`, `c`, `tanh_c` (tanh of the new cell) and `h` are [B, H]; all
// contiguous. One vectorised pass (fast_math.h) per row, without LibTorch
// calls: a step of a few rows is too small for their overhead.
DPLACE_VECTOR_CLONES
void PointwiseForwardRows(int64_t batch, int64_t hidden, float* __restrict g,
                          const float* __restrict c_prev, float* __restrict c,
                          float* __restrict tanh_c, float* __restrict h) {
  for (int64_t b = 0; b < batch; ++b) {
    float* row = g + b * 4 * hidden;
    const float* before = c_prev + b * hidden;
    float* cell = c + b * hidden;
    float* tanh_cell = tanh_c + b * hidden;
    float* out = h + b * hidden;
#pragma omp simd
    for (int64_t j = 0; j < 2 * hidden; ++j) row[j] = FastSigmoid(row[j]);
#pragma omp simd
    for (int64_t j = 2 * hidden; j < 3 * hidden; ++j) row[j] = FastTanh(row[j]);
#pragma omp simd
    for (int64_t j = 3 * hidden; j < 4 * hidden; ++j) {
      row[j] = FastSigmoid(row[j]);
    }
#pragma omp simd
    for (int64_t j = 0; j < hidden; ++j) {
      const float next =
          row[hidden + j] * before[j] + row[j] * row[2 * hidden + j];
      cell[j] = next;
      const float t = FastTanh(next);
      tanh_cell[j] = t;
      out[j] = row[3 * hidden + j] * t;
    }
  }
}

void PointwiseForward(const torch::Tensor& gates, const torch::Tensor& c_prev,
                      torch::Tensor& c, torch::Tensor& tanh_c,
                      torch::Tensor& h) {
  PointwiseForwardRows(gates.size(0), c.size(1), gates.data_ptr<float>(),
                       c_prev.data_ptr<float>(), c.data_ptr<float>(),
                       tanh_c.data_ptr<float>(), h.data_ptr<float>());
}

// One step backwards: given the gradient of h_t (`dh`, the output's plus
// the next step's) and of c_t (`dc`, updated in place to that of c_{t-1}),
// writes the gradient of the gates' pre-activations to `dgates`.
void PointwiseBackward(int64_t batch, int64_t hidden, const float* gates,
                       const float* c_prev, const float* tanh_c,
                       const float* dh, float* dc, float* dgates) {
  for (int64_t b = 0; b < batch; ++b) {
    const float* g = gates + b * 4 * hidden;
    float* dg = dgates + b * 4 * hidden;
    const int64_t row = b * hidden;
    for (int64_t j = 0; j < hidden; ++j) {
      const float i = g[j], f = g[hidden + j], u = g[2 * hidden + j],
                  o = g[3 * hidden + j];
      const float t = tanh_c[row + j];
      const float d_h = dh[row + j];
      const float d_c = dc[row + j] + d_h * o * (1 - t * t);
      dg[j] = d_c * u * i * (1 - i);
      dg[hidden + j] = d_c * c_prev[row + j] * f * (1 - f);
      dg[2 * hidden + j] = d_c * i * (1 - u * u);
      dg[3 * hidden + j] = d_h * t * o * (1 - o);
      dc[row + j] = d_c * f;
    }
  }
}

void CheckFloat(const torch::Tensor& t, const char* what) {
  if (t.scalar_type() != torch::kFloat32 || !t.device().is_cpu()) {
    throw std::invalid_argument(std::string("LstmRecurrence: ") + what +
                                " must be a float32 CPU tensor");
  }
}

class LstmRecurrenceFunction
    : public torch::autograd::Function<LstmRecurrenceFunction> {
 public:
  static torch::autograd::variable_list forward(
      torch::autograd::AutogradContext* ctx, torch::Tensor x_gates,
      torch::Tensor h0, torch::Tensor c0, torch::Tensor w_hh) {
    const int64_t steps = x_gates.size(0), batch = x_gates.size(1),
                  hidden = w_hh.size(1);
    if (steps < 1 || x_gates.size(2) != 4 * hidden ||
        w_hh.size(0) != 4 * hidden || h0.sizes() != c0.sizes() ||
        h0.size(0) != batch || h0.size(1) != hidden) {
      throw std::invalid_argument("LstmRecurrence: inconsistent shapes");
    }
    CheckFloat(x_gates, "x_gates");
    CheckFloat(h0, "h0");
    CheckFloat(w_hh, "w_hh");
    x_gates = x_gates.contiguous();
    h0 = h0.contiguous();
    torch::Tensor gates = torch::empty({steps, batch, 4 * hidden});
    torch::Tensor cells = torch::empty({steps + 1, batch, hidden});
    torch::Tensor tanh_c = torch::empty({steps, batch, hidden});
    torch::Tensor outputs = torch::empty({steps, batch, hidden});
    cells[0].copy_(c0);
    gates.copy_(x_gates);
    torch::Tensor h = h0;
    PackedWeight packed;
    if (WorthPacking(w_hh, batch, steps)) packed = PackWeight(w_hh.t());
    for (int64_t t = 0; t < steps; ++t) {
      torch::Tensor g = gates[t], c = cells[t + 1], tc = tanh_c[t],
                    out = outputs[t];
      AddProducts(h, w_hh, /*transposed_w=*/false, /*accumulate=*/true, g,
                  &packed);
      PointwiseForward(g, cells[t], c, tc, out);
      h = out;
    }
    ctx->save_for_backward({gates, cells, tanh_c, outputs, h0, w_hh});
    return {outputs, outputs[steps - 1].clone(), cells[steps].clone()};
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grads) {
    return Backward(ctx, grads);
  }

  // The gradients of x_gates, h0, c0 and w_hh, from what the forward pass
  // saved: {gates, cells, tanh_c, outputs, h0, w_hh}.
  static torch::autograd::variable_list Backward(
      torch::autograd::AutogradContext* ctx,
      const torch::autograd::variable_list& grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &gates = saved[0], &cells = saved[1],
                        &tanh_c = saved[2], &outputs = saved[3], &h0 = saved[4],
                        &w_hh = saved[5];
    const int64_t steps = gates.size(0), batch = gates.size(1),
                  hidden = w_hh.size(1);
    const torch::Tensor d_outputs =
        grads[0].defined() ? grads[0].contiguous() : torch::Tensor();
    torch::Tensor dh = grads[1].defined() ? grads[1].contiguous().clone()
                                          : torch::zeros({batch, hidden});
    torch::Tensor dc = grads[2].defined() ? grads[2].contiguous().clone()
                                          : torch::zeros({batch, hidden});
    torch::Tensor d_gates = torch::empty({steps, batch, 4 * hidden});
    PackedWeight packed;
    if (WorthPacking(w_hh, batch, steps)) packed = PackWeight(w_hh);
    for (int64_t t = steps - 1; t >= 0; --t) {
      if (d_outputs.defined()) dh.add_(d_outputs[t]);
      torch::Tensor dg = d_gates[t];
      PointwiseBackward(batch, hidden, gates[t].data_ptr<float>(),
                        cells[t].data_ptr<float>(), tanh_c[t].data_ptr<float>(),
                        dh.data_ptr<float>(), dc.data_ptr<float>(),
                        dg.data_ptr<float>());
      AddProducts(dg, w_hh, /*transposed_w=*/true,
                  /*accumulate=*/false, dh, &packed);  // Gradient of h_{t-1}.
    }
    const torch::Tensor h_before =
        torch::cat({h0.unsqueeze(0), outputs.slice(0, 0, steps - 1)}, 0);
    const torch::Tensor d_w_hh =
        d_gates.view({steps * batch, 4 * hidden})
            .t()
            .mm(h_before.view({steps * batch, hidden}));
    return {d_gates, dh, dc, d_w_hh};
  }
};

// AttentionFeedingRecurrence's recurrence: the forward pass keeps every
// step's values (gates' activations, cells, tanh of the cells, the
// recurrent input [context_t, h_{t-1}], queries and attention weights);
// the backward pass runs the recurrence backwards, one [B, 4H] x [4H, 2H]
// product and the attention's backward pass per step, and the weights'
// gradients as one product each over all steps.
class AttentionFeedingFunction
    : public torch::autograd::Function<AttentionFeedingFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                               torch::Tensor x_gates, torch::Tensor h0,
                               torch::Tensor c0, torch::Tensor keys,
                               torch::Tensor states, torch::Tensor v,
                               torch::Tensor w_query, torch::Tensor w) {
    const int64_t steps = x_gates.size(0), batch = x_gates.size(1),
                  hidden = h0.size(1), groups = keys.size(0),
                  size = keys.size(1);
    if (steps < 1 || x_gates.dim() != 3 || x_gates.size(2) != 4 * hidden ||
        h0.size(0) != batch || c0.sizes() != h0.sizes() ||
        states.size(0) != groups || states.size(1) != hidden || v.dim() != 1 ||
        v.size(0) != size || w_query.size(0) != size ||
        w_query.size(1) != hidden || w.size(0) != 4 * hidden ||
        w.size(1) != 2 * hidden) {
      throw std::invalid_argument(
          "AttentionFeedingRecurrence: inconsistent shapes");
    }
    for (const torch::Tensor* t :
         {&x_gates, &h0, &c0, &keys, &states, &v, &w_query, &w}) {
      CheckFloat(*t, "every input");
    }
    keys = keys.contiguous();
    states = states.contiguous();
    v = v.contiguous();
    w_query = w_query.contiguous();
    w = w.contiguous();
    const torch::Tensor h_start = h0.contiguous();
    torch::Tensor gates = x_gates.contiguous().clone();
    torch::Tensor cells = torch::empty({steps + 1, batch, hidden});
    torch::Tensor tanh_c = torch::empty({steps, batch, hidden});
    torch::Tensor outputs = torch::empty({steps, batch, hidden});
    torch::Tensor inputs = torch::empty({steps, batch, 2 * hidden});
    torch::Tensor queries = torch::empty({steps, batch, size});
    torch::Tensor weights = torch::empty({steps, batch, groups});
    cells[0].copy_(c0);
    PackedWeight packed;
    if (WorthPacking(w, batch, steps)) packed = PackWeight(w.t());
    const int b = static_cast<int>(batch), h = static_cast<int>(hidden),
              k = static_cast<int>(groups), a = static_cast<int>(size);
    for (int64_t t = 0; t < steps; ++t) {
      const float* h_prev =
          t == 0 ? h_start.data_ptr<float>() : outputs[t - 1].data_ptr<float>();
      float* z = inputs[t].data_ptr<float>();  // [context_t, h_{t-1}].
      float* q = queries[t].data_ptr<float>();
      float* attention = weights[t].data_ptr<float>();
      for (int64_t r = 0; r < batch; ++r) {
        std::copy(h_prev + r * hidden, h_prev + (r + 1) * hidden,
                  z + r * 2 * hidden + hidden);
      }
      {
        // Each raw product named as AddProducts names its own.
        RECORD_FUNCTION("dplace::row_products",
                        std::vector<c10::IValue>({queries[t], w_query}));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, b, a, h, 1.0f,
                    h_prev, h, w_query.data_ptr<float>(), h, 0.0f, q, a);
      }
      AdditiveAttentionScoresRows(keys.data_ptr<float>(), q,
                                  v.data_ptr<float>(), batch, groups, size,
                                  attention);
      SoftmaxRows(attention, batch, groups);
      {
        RECORD_FUNCTION("dplace::row_products",
                        std::vector<c10::IValue>({weights[t], states}));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, b, h, k, 1.0f,
                    attention, k, states.data_ptr<float>(), h, 0.0f, z, 2 * h);
      }
      torch::Tensor g = gates[t], c = cells[t + 1], tc = tanh_c[t],
                    out = outputs[t];
      AddProducts(inputs[t], w, /*transposed_w=*/false, /*accumulate=*/true, g,
                  &packed);
      PointwiseForward(g, cells[t], c, tc, out);
    }
    ctx->save_for_backward({gates, cells, tanh_c, inputs, queries, weights,
                            keys, states, v, w_query, w});
    return outputs;
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &gates = saved[0], &cells = saved[1],
                        &tanh_c = saved[2], &inputs = saved[3],
                        &queries = saved[4], &weights = saved[5],
                        &keys = saved[6], &states = saved[7], &v = saved[8],
                        &w_query = saved[9], &w = saved[10];
    const int64_t steps = gates.size(0), batch = gates.size(1),
                  hidden = cells.size(2), groups = keys.size(0),
                  size = keys.size(1);
    const int b = static_cast<int>(batch), h = static_cast<int>(hidden),
              k = static_cast<int>(groups), a = static_cast<int>(size);
    const torch::Tensor d_outputs =
        grads[0].defined() ? grads[0].contiguous() : torch::Tensor();
    torch::Tensor dh = torch::zeros({batch, hidden});
    torch::Tensor dc = torch::zeros({batch, hidden});
    torch::Tensor d_gates = torch::empty({steps, batch, 4 * hidden});
    torch::Tensor d_context = torch::empty({steps, batch, hidden});
    torch::Tensor d_queries = torch::zeros({steps, batch, size});
    torch::Tensor d_keys = torch::zeros_like(keys);
    torch::Tensor d_v = torch::zeros_like(v);
    torch::Tensor dz = torch::empty({batch, 2 * hidden});
    std::vector<float> d_attention(static_cast<size_t>(batch * groups));
    PackedWeight packed;
    if (WorthPacking(w, batch, steps)) packed = PackWeight(w);
    float* d_h = dh.data_ptr<float>();
    for (int64_t t = steps - 1; t >= 0; --t) {
      if (d_outputs.defined()) dh.add_(d_outputs[t]);
      torch::Tensor dg = d_gates[t];
      PointwiseBackward(batch, hidden, gates[t].data_ptr<float>(),
                        cells[t].data_ptr<float>(), tanh_c[t].data_ptr<float>(),
                        d_h, dc.data_ptr<float>(), dg.data_ptr<float>());
      // The gradient of [context_t, h_{t-1}].
      AddProducts(dg, w, /*transposed_w=*/true, /*accumulate=*/false, dz,
                  &packed);
      const float* d_z = dz.data_ptr<float>();
      float* d_ctx = d_context[t].data_ptr<float>();
      for (int64_t r = 0; r < batch; ++r) {
        std::copy(d_z + r * 2 * hidden, d_z + r * 2 * hidden + hidden,
                  d_ctx + r * hidden);
        std::copy(d_z + r * 2 * hidden + hidden, d_z + (r + 1) * 2 * hidden,
                  d_h + r * hidden);
      }
      // Through context_t = softmax(scores) states to the scores.
      const float* attention = weights[t].data_ptr<float>();
      float* d_a = d_attention.data();
      {
        RECORD_FUNCTION("dplace::row_products",
                        std::vector<c10::IValue>({d_context[t], states}));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, b, k, h, 1.0f,
                    d_ctx, h, states.data_ptr<float>(), h, 0.0f, d_a, k);
      }
      for (int64_t r = 0; r < batch; ++r) {
        const float* p = attention + r * groups;
        float* d = d_a + r * groups;
        float dot = 0;
        for (int64_t j = 0; j < groups; ++j) dot += d[j] * p[j];
        for (int64_t j = 0; j < groups; ++j) d[j] = p[j] * (d[j] - dot);
      }
      float* d_q = d_queries[t].data_ptr<float>();
      AdditiveAttentionScoresBackwardRows(
          keys.data_ptr<float>(), queries[t].data_ptr<float>(),
          v.data_ptr<float>(), d_a, batch, groups, size,
          d_keys.data_ptr<float>(), d_q, d_v.data_ptr<float>());
      // q_t = h_{t-1} W_q^T.
      {
        RECORD_FUNCTION("dplace::row_products",
                        std::vector<c10::IValue>({d_queries[t], w_query}));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, b, h, a, 1.0f,
                    d_q, a, w_query.data_ptr<float>(), h, 1.0f, d_h, h);
      }
    }
    const int64_t rows = steps * batch;
    const torch::Tensor z = inputs.view({rows, 2 * hidden});
    const torch::Tensor d_w = d_gates.view({rows, 4 * hidden}).t().mm(z);
    const torch::Tensor d_states =
        weights.view({rows, groups}).t().mm(d_context.view({rows, hidden}));
    const torch::Tensor d_w_query =
        d_queries.view({rows, size}).t().mm(z.slice(1, hidden, 2 * hidden));
    return {d_gates, dh, dc, d_keys, d_states, d_v, d_w_query, d_w};
  }
};

// LstmRecurrenceFunction with its forward pass already run: the trace's
// buffers are its results and what its backward pass reads.
class TracedLstmFunction
    : public torch::autograd::Function<TracedLstmFunction> {
 public:
  static torch::autograd::variable_list forward(
      torch::autograd::AutogradContext* ctx, torch::Tensor x_gates,
      torch::Tensor h0, torch::Tensor c0, torch::Tensor w_hh,
      torch::Tensor gates, torch::Tensor cells, torch::Tensor tanh_c,
      torch::Tensor outputs) {
    const int64_t steps = x_gates.size(0), batch = x_gates.size(1),
                  hidden = w_hh.size(1);
    if (gates.sizes() != x_gates.sizes() ||
        cells.sizes() != torch::IntArrayRef({steps + 1, batch, hidden}) ||
        tanh_c.sizes() != outputs.sizes() ||
        outputs.sizes() != torch::IntArrayRef({steps, batch, hidden}) ||
        h0.sizes() != torch::IntArrayRef({batch, hidden})) {
      throw std::invalid_argument("LstmRecurrence: trace of other shapes");
    }
    (void)c0;
    // The backward pass reads each step's [B, width] rows as one block: a
    // block of rows of a larger trace (Narrow) will do as it is.
    auto rows_contiguous = [](torch::Tensor& t) {
      if (t.stride(2) != 1 || t.stride(1) != t.size(2)) t = t.contiguous();
    };
    rows_contiguous(gates);
    rows_contiguous(cells);
    rows_contiguous(tanh_c);
    rows_contiguous(outputs);
    ctx->save_for_backward(
        {gates, cells, tanh_c, outputs, h0.contiguous(), w_hh});
    return {outputs, outputs[steps - 1].clone(), cells[steps].clone()};
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grads) {
    torch::autograd::variable_list d =
        LstmRecurrenceFunction::Backward(ctx, grads);
    d.resize(8);  // No gradient for the trace.
    return d;
  }
};

}  // namespace

LstmSequence LstmRecurrence(const torch::Tensor& x_gates,
                            const torch::Tensor& h0, const torch::Tensor& c0,
                            const torch::Tensor& w_hh, const LstmTrace* trace) {
  const torch::autograd::variable_list out =
      trace == nullptr ? LstmRecurrenceFunction::apply(x_gates, h0, c0, w_hh)
                       : TracedLstmFunction::apply(
                             x_gates, h0, c0, w_hh, trace->gates, trace->cells,
                             trace->tanh_c, trace->outputs);
  return {out[0], out[1], out[2]};
}

torch::Tensor AttentionFeedingRecurrence(
    const torch::Tensor& x_gates, const torch::Tensor& h0,
    const torch::Tensor& c0, const torch::Tensor& keys,
    const torch::Tensor& states, const torch::Tensor& v,
    const torch::Tensor& w_query, const torch::Tensor& w) {
  return AttentionFeedingFunction::apply(x_gates, h0, c0, keys, states, v,
                                         w_query, w);
}

LstmTrace LstmTrace::Empty(int64_t steps, int64_t batch, int64_t hidden) {
  return {torch::empty({steps, batch, 4 * hidden}),
          torch::empty({steps + 1, batch, hidden}),
          torch::empty({steps, batch, hidden}),
          torch::empty({steps, batch, hidden})};
}

LstmTrace LstmTrace::Rows(const torch::Tensor& rows) const {
  return {gates.index_select(1, rows), cells.index_select(1, rows),
          tanh_c.index_select(1, rows), outputs.index_select(1, rows)};
}

LstmTrace LstmTrace::Narrow(int64_t begin, int64_t n) const {
  return {gates.narrow(1, begin, n), cells.narrow(1, begin, n),
          tanh_c.narrow(1, begin, n), outputs.narrow(1, begin, n)};
}

std::optional<LstmTrace> LstmTrace::RowsOf(
    const torch::Tensor& drawn, const torch::Tensor& sequences) const {
  // [n, k]: row i of `sequences` equals drawn row j.
  const torch::Tensor equal =
      (sequences.unsqueeze(1) == drawn.unsqueeze(0)).all(2);
  if (!equal.any(1).all().item<bool>()) return std::nullopt;
  const torch::Tensor rows = equal.to(torch::kInt8).argmax(1);
  if (rows.size(0) == drawn.size(0) &&
      torch::equal(rows, torch::arange(rows.size(0)))) {
    return *this;  // All of them, in order: no copy.
  }
  return Rows(rows);
}

LstmWeights LayerWeights(torch::nn::LSTM& lstm, bool reverse) {
  const std::string suffix = reverse ? "_l0_reverse" : "_l0";
  const auto params = lstm->named_parameters(/*recurse=*/false);
  auto get = [&](const std::string& name) {
    const torch::Tensor* t = params.find(name + suffix);
    if (t == nullptr) {
      throw std::invalid_argument("LSTM without parameter " + name + suffix);
    }
    return *t;
  };
  return {get("weight_ih"), get("weight_hh"), get("bias_ih") + get("bias_hh")};
}

LstmWeights CellWeights(torch::nn::LSTMCell& cell) {
  return {cell->weight_ih, cell->weight_hh, cell->bias_ih + cell->bias_hh};
}

LstmSequence RunLstm(torch::nn::LSTM& lstm, const torch::Tensor& input,
                     torch::Tensor h0, torch::Tensor c0, bool reverse,
                     const LstmTrace* trace) {
  const LstmWeights w = LayerWeights(lstm, reverse);
  const int64_t batch = input.size(1), hidden = w.w_hh.size(1);
  if (!h0.defined()) h0 = torch::zeros({batch, hidden});
  if (!c0.defined()) c0 = torch::zeros({batch, hidden});
  const torch::Tensor ordered = reverse ? input.flip(0) : input;
  if (reverse && trace != nullptr) {
    throw std::invalid_argument("RunLstm: a trace runs forward only");
  }
  LstmSequence s = LstmRecurrence(torch::linear(ordered, w.w_ih, w.bias), h0,
                                  c0, w.w_hh, trace);
  if (reverse) s.outputs = s.outputs.flip(0);
  return s;
}

torch::Tensor RowLinear(const torch::Tensor& x, const torch::Tensor& w,
                        const torch::Tensor& bias, const PackedWeight* packed) {
  torch::NoGradGuard no_grad;
  // A new tensor: for one row, bias.unsqueeze(0).expand(...).contiguous()
  // would be the bias itself, and the products would accumulate into it.
  torch::Tensor out = torch::empty({x.size(0), w.size(0)});
  if (bias.defined()) out.copy_(bias.unsqueeze(0).expand_as(out));
  AddProducts(x, w, /*transposed_w=*/false, /*accumulate=*/bias.defined(), out,
              packed);
  return out;
}

torch::Tensor RowMm(const torch::Tensor& x, const torch::Tensor& w) {
  torch::NoGradGuard no_grad;
  torch::Tensor out = torch::empty({x.size(0), w.size(1)});
  AddProducts(x, w, /*transposed_w=*/true, /*accumulate=*/false, out);
  return out;
}

void LstmStep(const torch::Tensor& x_gates, const torch::Tensor& w_hh,
              torch::Tensor* h, torch::Tensor* c, const PackedWeight* packed) {
  torch::NoGradGuard no_grad;
  const int64_t batch = x_gates.size(0), hidden = w_hh.size(1);
  LstmTrace step = LstmTrace::Empty(1, batch, hidden);
  step.cells[0].copy_(*c);
  LstmTraceStep(x_gates, w_hh, *h, 0, 0, batch, &step, packed);
  *h = step.outputs[0];
  *c = step.cells[1];
}

void LstmTraceStep(const torch::Tensor& x_gates, const torch::Tensor& w_hh,
                   const torch::Tensor& h0, int64_t t, int64_t begin,
                   int64_t end, LstmTrace* trace, const PackedWeight* packed) {
  torch::NoGradGuard no_grad;
  const int64_t n = end - begin;
  torch::Tensor gates = trace->gates[t].narrow(0, begin, n);
  gates.copy_(x_gates);
  const torch::Tensor h =
      t == 0 ? h0.contiguous() : trace->outputs[t - 1].narrow(0, begin, n);
  AddProducts(h, w_hh, /*transposed_w=*/false, /*accumulate=*/true, gates,
              packed);
  torch::Tensor c = trace->cells[t + 1].narrow(0, begin, n);
  torch::Tensor tanh_c = trace->tanh_c[t].narrow(0, begin, n);
  torch::Tensor h_next = trace->outputs[t].narrow(0, begin, n);
  PointwiseForward(gates, trace->cells[t].narrow(0, begin, n), c, tanh_c,
                   h_next);
}

}  // namespace dplace
