// Row kernels of the fused log-prob: the statistics of the online log-sum-exp over one block of a
// row of logits, and the softmax gradient of one row. Plain loops over fp32 that the compiler
// vectorizes (row_math.cpp is compiled with -O3 and, on x86-64, cloned for AVX2 and AVX-512).
// Internal to kernels/.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace grpo::kernels::cpu {

// Softmax statistics of z = scale * x over one block: m = max z, sum = sum exp(z - m),
// dot = sum exp(z - m) (z - m).
struct BlockStats {
  float max = -std::numeric_limits<float>::infinity();
  float sum = 0.0f;
  float dot = 0.0f;
};

BlockStats block_stats(const float* x, std::int64_t n, float scale);

// The online log-sum-exp of one row, merged block by block in fp64.
// entropy = -sum p log p = log(sum) - dot / sum with p = exp(z - lse).
struct OnlineSoftmax {
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0.0;
  double dot = 0.0;

  void merge(const BlockStats& b) {
    const double bm = b.max;
    if (b.sum == 0.0f) return;  // an empty block
    if (sum == 0.0) {
      max = bm;
      sum = b.sum;
      dot = b.dot;
      return;
    }
    const double m = std::max(max, bm);
    const double alpha = std::exp(max - m);
    const double beta = std::exp(bm - m);
    // dot is relative to the running max: sum e^(z-m')(z-m') = e^(m-m')(dot + (m - m') sum).
    dot = alpha * (dot + (max - m) * sum) + beta * (static_cast<double>(b.dot) + (bm - m) * b.sum);
    sum = alpha * sum + beta * b.sum;
    max = m;
  }
  double lse() const { return max + std::log(sum); }
  double entropy() const { return std::log(sum) - dot / sum; }
};

// out[j] = -p_j * (a + b * (z_j - lse + entropy)) with z_j = scale * x[j], p_j = exp(z_j - lse):
// the gradient of a * log p_t + b * entropy in the logits z, without the a * [j == t] term (the
// caller adds it). out may alias x.
void softmax_grad(const float* x, float* out, std::int64_t n, float scale, float lse, float a,
                  float b, float entropy);

}  // namespace grpo::kernels::cpu
