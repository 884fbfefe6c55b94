// A one-layer LSTM run as one operation over a whole sequence, with a
// hand-written backward pass: the recurrence the policies' encoders and
// teacher-forced decoders run.
//
// torch::nn::LSTM on the CPU records ~15 autograd nodes per time step; its
// backward computes the recurrent weights' gradient as one small product
// per step ([4H, B] x [B, H], B = 1 to 10 placements) and sums them, which
// costs more than the arithmetic. Here the input part of every gate is one
// matrix product over the sequence (done by the caller, differentiable as
// usual), the recurrence keeps only h_{t-1} W_hh^T per step, and the
// backward pass runs the recurrence backwards with one [B, 4H] x [4H, H]
// product per step and the weight gradient as one product over all steps.
// Same gate layout (i, f, g, o) and parameters as torch::nn::LSTM, so the
// policies keep their LSTM modules (and checkpoints) and run them here.
#ifndef DPLACE_RL_NETS_LSTM_H_
#define DPLACE_RL_NETS_LSTM_H_

#include <torch/torch.h>

#include <optional>

#include "dplace/rl/nets/packed_weight.h"

namespace dplace {

struct LstmSequence {
  torch::Tensor outputs;  // [T, B, H]: h_1 .. h_T.
  torch::Tensor h, c;     // [B, H]: the final state.
};

// What a recurrence computes on its way and its backward pass reads: for T
// steps of B rows, the gates' activations (i, f, g, o) [T, B, 4H], the
// cells c_0 .. c_T [T + 1, B, H], tanh(c_t) [T, B, H] and h_1 .. h_T
// [T, B, H]. A sampling loop that steps the recurrence itself
// (LstmTraceStep) fills one, so that the update can take the recurrence's
// backward pass without running it forward again.
struct LstmTrace {
  torch::Tensor gates, cells, tanh_c, outputs;

  // Uninitialised buffers (float32) for `steps` x `batch` x `hidden`.
  static LstmTrace Empty(int64_t steps, int64_t batch, int64_t hidden);
  // Rows `rows` ([n] int64) of every buffer, as a new trace.
  LstmTrace Rows(const torch::Tensor& rows) const;
  // Rows [begin, begin + n) of every buffer, as views.
  LstmTrace Narrow(int64_t begin, int64_t n) const;
  // For a trace whose rows drew the sequences `drawn` [k, T] (int64): the
  // rows that drew `sequences` [n, T], matched by content in any order;
  // nullopt when one of them is not among `drawn`. No copy when
  // `sequences` is all of `drawn` in order.
  std::optional<LstmTrace> RowsOf(const torch::Tensor& drawn,
                                  const torch::Tensor& sequences) const;
};

// The recurrence of an LSTM layer given its gates' input part `x_gates`
// [T, B, 4H] (x_t W_ih^T + b_ih + b_hh), the initial state `h0`, `c0`
// [B, H] and the recurrent weights `w_hh` [4H, H]. Differentiable in all
// four (float32, CPU). With `trace`, the forward pass is not run: its
// results are taken from the trace, which REQUIRES it to hold the
// recurrence of these same values (to rounding: e.g. LstmTraceStep's over
// a table of the same gate inputs).
LstmSequence LstmRecurrence(const torch::Tensor& x_gates,
                            const torch::Tensor& h0, const torch::Tensor& c0,
                            const torch::Tensor& w_hh,
                            const LstmTrace* trace = nullptr);

// The recurrence of a decoder that feeds its attention's context (EAGLE's
// placer, attention before the decoder) over T steps of B rows:
//   q_t = h_{t-1} W_q^T,  a_t = softmax_j(v . tanh(keys[j] + q_t)),
//   context_t = a_t states,  gates_t = x_t + [context_t, h_{t-1}] W^T,
//   (h_t, c_t) = the LSTM cell of gates_t (i, f, g, o) and c_{t-1};
// for `x_gates` [T, B, 4H], `h0`, `c0` [B, H], `keys` [K, A], `states` [K,
// H], `v` [A], `w_query` [A, H] and `w` [4H, 2H]. Returns h_1 .. h_T [T,
// B, H], differentiable in all eight (float32, CPU). One autograd node
// with a hand-written backward pass: LibTorch's ops would record about 20
// nodes per step, whose bookkeeping cost more than their arithmetic.
torch::Tensor AttentionFeedingRecurrence(
    const torch::Tensor& x_gates, const torch::Tensor& h0,
    const torch::Tensor& c0, const torch::Tensor& keys,
    const torch::Tensor& states, const torch::Tensor& v,
    const torch::Tensor& w_query, const torch::Tensor& w);

// Layer 0 of `lstm` (one direction; `reverse`: the backward direction of a
// bidirectional one, which reads the sequence from its end) over `input`
// [T, B, I] from (`h0`, `c0`) [B, H]; undefined h0/c0 start at zero.
// outputs[t] is the state after reading input[t] in either direction.
// `trace`: as LstmRecurrence's (forward direction only).
LstmSequence RunLstm(torch::nn::LSTM& lstm, const torch::Tensor& input,
                     torch::Tensor h0 = {}, torch::Tensor c0 = {},
                     bool reverse = false, const LstmTrace* trace = nullptr);

// x [B, K] W^T + bias, for `w` [N, K] and `bias` [N] (or undefined), without
// gradient: torch::linear for the few rows of a recurrence step. Up to 8
// rows and for a `w` of 2^18 elements or more, it runs one BLAS
// matrix-vector product per row, since OpenBLAS's sgemm packs all of `w` on
// every call (at 4 rows x [1024, 256], twice the time). `w`'s rows must be
// contiguous (a slice of columns will do) for that; otherwise it is one
// matrix product. `packed`: w^T packed (PackWeight), used when given; a
// loop that multiplies by the same `w` at every step packs it once.
torch::Tensor RowLinear(const torch::Tensor& x, const torch::Tensor& w,
                        const torch::Tensor& bias = {},
                        const PackedWeight* packed = nullptr);
// x [B, N] w for `w` [N, K], without gradient, the same way.
torch::Tensor RowMm(const torch::Tensor& x, const torch::Tensor& w);

// One LSTM step without gradient, for sampling loops: gates = `x_gates`
// [B, 4H] + h W_hh^T; updates `h` and `c` [B, H] (new tensors). `packed`:
// W_hh^T packed, as RowLinear's.
void LstmStep(const torch::Tensor& x_gates, const torch::Tensor& w_hh,
              torch::Tensor* h, torch::Tensor* c,
              const PackedWeight* packed = nullptr);

// The same step written into rows [begin, end) of step t of `trace`: it
// reads h_{t-1} from trace->outputs[t - 1] (`h0` [end - begin, H] at
// t = 0) and c_{t-1} from trace->cells[t] (the caller fills cells[0]), and
// writes gates[t], cells[t + 1], tanh_c[t] and outputs[t] (h_t). Rows of
// different [begin, end) may be stepped on different threads. `packed`:
// W_hh^T packed, as RowLinear's.
void LstmTraceStep(const torch::Tensor& x_gates, const torch::Tensor& w_hh,
                   const torch::Tensor& h0, int64_t t, int64_t begin,
                   int64_t end, LstmTrace* trace,
                   const PackedWeight* packed = nullptr);

// The parameters of layer 0 of `lstm` (`reverse`: of its backward
// direction).
struct LstmWeights {
  torch::Tensor w_ih, w_hh, bias;  // bias = b_ih + b_hh.
};
LstmWeights LayerWeights(torch::nn::LSTM& lstm, bool reverse = false);
LstmWeights CellWeights(torch::nn::LSTMCell& cell);

}  // namespace dplace

#endif  // DPLACE_RL_NETS_LSTM_H_
