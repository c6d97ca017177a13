#include "cpu/row_math.h"

#include <bit>

// Function clones for AVX2+FMA and AVX-512 next to the baseline, picked at load time (ifunc).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define GRPO_VECTOR_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define GRPO_VECTOR_CLONES
#endif

namespace grpo::kernels::cpu {
namespace {

constexpr int kLanes = 16;

// exp(x) for fp32 with ~1 ulp relative error (Cephes' expf): branch-free, so it vectorizes.
// Inputs below -87.3 give ~1.2e-38 instead of a denormal or 0, which is negligible in every sum
// it enters; NaN stays NaN.
inline float exp_approx(float x) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  x = x < -87.3f ? -87.3f : x;
  x = x > 88.3f ? 88.3f : x;
  const float t = x * 1.44269504088896341f + kMagic;
  const std::int32_t n = std::bit_cast<std::int32_t>(t) - std::bit_cast<std::int32_t>(kMagic);
  const float nf = t - kMagic;
  float r = x - nf * 0.693359375f;
  r = r + nf * 2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  return y * std::bit_cast<float>((n + 127) << 23);
}

}  // namespace

GRPO_VECTOR_CLONES
BlockStats block_stats(const float* x, std::int64_t n, float scale) {
  BlockStats out;
  if (n <= 0) return out;
  float lane_max[kLanes];
  for (float& m : lane_max) m = -std::numeric_limits<float>::infinity();
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const float z = x[i + l] * scale;
      lane_max[l] = z > lane_max[l] ? z : lane_max[l];
    }
  }
  float m = -std::numeric_limits<float>::infinity();
  for (float lm : lane_max) m = lm > m ? lm : m;
  for (std::int64_t j = i; j < n; ++j) m = x[j] * scale > m ? x[j] * scale : m;
  if (std::isnan(m)) m = 0.0f;  // a NaN row: the sums below carry the NaN

  float lane_sum[kLanes] = {};
  float lane_dot[kLanes] = {};
  i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const float d = x[i + l] * scale - m;
      const float e = exp_approx(d);
      lane_sum[l] += e;
      lane_dot[l] += e * d;
    }
  }
  float s = 0.0f;
  float dot = 0.0f;
  for (int l = 0; l < kLanes; ++l) {
    s += lane_sum[l];
    dot += lane_dot[l];
  }
  for (std::int64_t j = i; j < n; ++j) {
    const float d = x[j] * scale - m;
    const float e = exp_approx(d);
    s += e;
    dot += e * d;
  }
  out.max = m;
  out.sum = s;
  out.dot = dot;
  return out;
}

GRPO_VECTOR_CLONES
void softmax_grad(const float* x, float* out, std::int64_t n, float scale, float lse, float a,
                  float b, float entropy) {
  for (std::int64_t j = 0; j < n; ++j) {
    const float d = x[j] * scale - lse;
    const float p = exp_approx(d);
    out[j] = -p * (a + b * (d + entropy));
  }
}

}  // namespace grpo::kernels::cpu
