// Element-wise functions for the policies' hand-written loops, written so
// that GCC vectorises them (no calls, no branches the vectoriser cannot
// turn into selects): exp of a non-positive argument, tanh and the
// logistic sigmoid, accurate to about 2e-7 (absolute).
//
//   DPLACE_VECTOR_CLONES
//   void Kernel(const float* x, float* y, int64_t n) {
//   #pragma omp simd
//     for (int64_t i = 0; i < n; ++i) y[i] = FastTanh(x[i]);
//   }
//
// A file with such loops compiles with -fopenmp-simd (CMakeLists.txt).
#ifndef DPLACE_RL_NETS_FAST_MATH_H_
#define DPLACE_RL_NETS_FAST_MATH_H_

#include <cmath>
#include <cstdint>

namespace dplace {

// One version of a function per vector width (AVX-512, AVX2, SSE2), chosen
// when the program loads (GCC on x86-64; elsewhere the compiler's default).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DPLACE_VECTOR_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define DPLACE_VECTOR_CLONES
#endif

// exp(y) for y in [-87, 0]: y = n ln 2 + r with |r| <= ln 2 / 2, exp(r) by
// its Taylor polynomial of degree 6 (relative error below 1.2e-7), 2^n
// from the exponent bits. Every operation has a vector instruction, so
// loops over these functions vectorise (std::fmin would not: its NaN rule
// has none; the clamps below are comparisons).
inline float ExpNonPositive(float y) {
  // n = round(y / ln 2), by the float rounding of adding 1.5 x 2^23.
  const float n = (y * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  // ln 2 in two parts, the first exact in float, so that r is exact.
  const float r = (y - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
  float p = 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const float two_to_n =
      __builtin_bit_cast(float, (static_cast<int32_t>(n) + 127) << 23);
  return p * two_to_n;
}

// tanh(x) = sign(x) (1 - e) / (1 + e) with e = exp(-2 |x|), |x| clamped to
// 9 (where tanh is 1 to float precision).
inline float FastTanh(float x) {
  const float magnitude = std::fabs(x);
  const float a = magnitude < 9.0f ? magnitude : 9.0f;
  const float e = ExpNonPositive(-2.0f * a);
  return std::copysign((1.0f - e) / (1.0f + e), x);
}

// 1 / (1 + exp(-x)) = s or e s for x >= 0 or x < 0, with e = exp(-|x|)
// (|x| clamped to 87) and s = 1 / (1 + e).
inline float FastSigmoid(float x) {
  const float magnitude = std::fabs(x);
  const float a = magnitude < 87.0f ? magnitude : 87.0f;
  const float e = ExpNonPositive(-a);
  const float s = 1.0f / (1.0f + e);
  return x >= 0 ? s : e * s;
}

}  // namespace dplace

#endif  // DPLACE_RL_NETS_FAST_MATH_H_
