// The additive attention's scores (Bahdanau et al.) of the planners'
// seq2seq placer, in one pass.
#ifndef DPLACE_RL_NETS_ATTENTION_H_
#define DPLACE_RL_NETS_ATTENTION_H_

#include <torch/torch.h>

#include <cstdint>

namespace dplace {

// scores[..., j] = sum_a v[a] tanh(keys[j, a] + queries[..., a]) for `keys`
// [J, A], `queries` [..., A] and `v` [A] (float32, CPU); differentiable in
// all three. LibTorch's ops would build the [..., J, A] sums and their tanh
// as tensors (4 x 256 x 256 x 64 floats, 67 MB, at the Hierarchical
// Planner's update) and take 2.7 ns per tanh (Sleef's, on this machine);
// this runs the sums row by row in the CPU's vector registers, with a tanh
// of absolute error below 2e-7, and recomputes them in the backward pass
// instead of keeping them.
torch::Tensor AdditiveAttentionScores(const torch::Tensor& keys,
                                      const torch::Tensor& queries,
                                      const torch::Tensor& v);

// The same scores for `rows` queries on contiguous float arrays, without
// gradient or LibTorch calls (a sampling step's): keys [groups, size],
// queries [rows, size], v [size], scores [rows, groups].
void AdditiveAttentionScoresRows(const float* keys, const float* queries,
                                 const float* v, int64_t rows, int64_t groups,
                                 int64_t size, float* scores);

// The attention's weights from its scores: softmax of each of the `rows`
// rows of `scores` [rows, groups], in place.
void SoftmaxRows(float* scores, int64_t rows, int64_t groups);

// Their backward pass on the same arrays: given `d_scores` [rows, groups],
// ADDS the gradients to `d_keys` [groups, size], `d_queries` [rows, size]
// and `d_v` [size].
void AdditiveAttentionScoresBackwardRows(const float* keys,
                                         const float* queries, const float* v,
                                         const float* d_scores, int64_t rows,
                                         int64_t groups, int64_t size,
                                         float* d_keys, float* d_queries,
                                         float* d_v);

}  // namespace dplace

#endif  // DPLACE_RL_NETS_ATTENTION_H_
