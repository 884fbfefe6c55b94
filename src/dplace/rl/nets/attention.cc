#include "dplace/rl/nets/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "dplace/rl/nets/fast_math.h"

namespace dplace {
namespace {

DPLACE_VECTOR_CLONES
void ScoresForward(const float* __restrict keys,
                   const float* __restrict queries, const float* __restrict v,
                   int64_t rows, int64_t groups, int64_t size,
                   float* __restrict scores) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* q = queries + r * size;
    for (int64_t j = 0; j < groups; ++j) {
      const float* k = keys + j * size;
      float sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t a = 0; a < size; ++a) {
        sum += v[a] * FastTanh(k[a] + q[a]);
      }
      scores[r * groups + j] = sum;
    }
  }
}

// Adds the gradients of the scores' loss given `d_scores` [rows, groups].
DPLACE_VECTOR_CLONES
void ScoresBackward(const float* __restrict keys,
                    const float* __restrict queries, const float* __restrict v,
                    const float* __restrict d_scores, int64_t rows,
                    int64_t groups, int64_t size, float* __restrict d_keys,
                    float* __restrict d_queries, float* __restrict d_v) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* q = queries + r * size;
    float* d_q = d_queries + r * size;
    for (int64_t j = 0; j < groups; ++j) {
      const float* k = keys + j * size;
      float* d_k = d_keys + j * size;
      const float g = d_scores[r * groups + j];
#pragma omp simd
      for (int64_t a = 0; a < size; ++a) {
        const float t = FastTanh(k[a] + q[a]);
        d_v[a] += g * t;
        const float d_sum = g * v[a] * (1.0f - t * t);
        d_q[a] += d_sum;
        d_k[a] += d_sum;
      }
    }
  }
}

class AdditiveScoresFunction
    : public torch::autograd::Function<AdditiveScoresFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                               const torch::Tensor& keys,
                               const torch::Tensor& queries,
                               const torch::Tensor& v) {
    const int64_t groups = keys.size(0), size = keys.size(1);
    const torch::Tensor k = keys.contiguous();
    const torch::Tensor q = queries.reshape({-1, size}).contiguous();
    const torch::Tensor w = v.contiguous();
    torch::Tensor scores = torch::empty({q.size(0), groups});
    ScoresForward(k.data_ptr<float>(), q.data_ptr<float>(), w.data_ptr<float>(),
                  q.size(0), groups, size, scores.data_ptr<float>());
    ctx->save_for_backward({k, q, w});
    ctx->saved_data["query_sizes"] = queries.sizes().vec();
    std::vector<int64_t> sizes = queries.sizes().vec();
    sizes.back() = groups;
    return scores.view(sizes);
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor &k = saved[0], &q = saved[1], &w = saved[2];
    const int64_t groups = k.size(0), size = k.size(1);
    const torch::Tensor d_scores = grads[0].reshape({-1, groups}).contiguous();
    torch::Tensor d_k = torch::zeros_like(k), d_q = torch::zeros_like(q),
                  d_v = torch::zeros_like(w);
    ScoresBackward(k.data_ptr<float>(), q.data_ptr<float>(),
                   w.data_ptr<float>(), d_scores.data_ptr<float>(), q.size(0),
                   groups, size, d_k.data_ptr<float>(), d_q.data_ptr<float>(),
                   d_v.data_ptr<float>());
    return {d_k, d_q.view(ctx->saved_data["query_sizes"].toIntVector()), d_v};
  }
};

}  // namespace

torch::Tensor AdditiveAttentionScores(const torch::Tensor& keys,
                                      const torch::Tensor& queries,
                                      const torch::Tensor& v) {
  for (const torch::Tensor* t : {&keys, &queries, &v}) {
    if (t->scalar_type() != torch::kFloat32 || !t->device().is_cpu()) {
      throw std::invalid_argument(
          "AdditiveAttentionScores: float32 CPU tensors only");
    }
  }
  if (keys.dim() != 2 || queries.dim() < 1 || v.dim() != 1 ||
      queries.size(-1) != keys.size(1) || v.size(0) != keys.size(1)) {
    throw std::invalid_argument(
        "AdditiveAttentionScores: keys [J, A], queries [..., A] and v [A] "
        "expected");
  }
  return AdditiveScoresFunction::apply(keys, queries, v);
}

void AdditiveAttentionScoresRows(const float* keys, const float* queries,
                                 const float* v, int64_t rows, int64_t groups,
                                 int64_t size, float* scores) {
  ScoresForward(keys, queries, v, rows, groups, size, scores);
}

void SoftmaxRows(float* scores, int64_t rows, int64_t groups) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = scores + r * groups;
    const float top = *std::max_element(row, row + groups);
    float sum = 0;
    for (int64_t j = 0; j < groups; ++j) {
      row[j] = std::exp(row[j] - top);
      sum += row[j];
    }
    for (int64_t j = 0; j < groups; ++j) row[j] /= sum;
  }
}

void AdditiveAttentionScoresBackwardRows(const float* keys,
                                         const float* queries, const float* v,
                                         const float* d_scores, int64_t rows,
                                         int64_t groups, int64_t size,
                                         float* d_keys, float* d_queries,
                                         float* d_v) {
  ScoresBackward(keys, queries, v, d_scores, rows, groups, size, d_keys,
                 d_queries, d_v);
}

}  // namespace dplace
