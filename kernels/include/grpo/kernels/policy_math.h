// The per-token GRPO loss and its derivative, in plain C++ shared by the fused CPU kernels and the
// CUDA kernels (host and device). LibTorch-free. The formulas mirror the reference implementation
// (kernels/src/reference_ops.cpp, verl's compute_policy_loss and kl_penalty) including how
// LibTorch's autograd splits gradients at ties of max/min and at clamp bounds, so the fused
// gradients match the reference's autograd gradients.
#pragma once

#if defined(__CUDACC__)
#define GRPO_HOST_DEVICE __host__ __device__
#else
#define GRPO_HOST_DEVICE
#endif

#include <cmath>

namespace grpo::kernels {

// The KL estimators verl names (kl_loss_type): k1 "kl", "abs", k2 "mse", k3 "low_var_kl".
enum class KlType { kKl, kAbs, kMse, kLowVarKl };

namespace math {

// PolicyLossParams flattened for a kernel. inv_n: 1 / number of tokens (the token mean).
struct PolicyScalars {
  double clip_low = 0.2;
  double clip_high = 0.2;
  double clip_c = 3.0;
  bool use_kl = true;
  KlType kl_type = KlType::kLowVarKl;
  double kl_coef = 0.001;
  double entropy_coeff = 0.0;
  double inv_n = 1.0;
};

struct TokenLoss {
  double pg = 0.0;       // this token's clipped surrogate (before the mean)
  double kl = 0.0;       // this token's KL estimate (0 without use_kl)
  bool clipped = false;  // the clipped branch won (pg2 > pg1): clip_frac counts these
  // d(loss)/d(logprob) of this token: (d pg + kl_coef * d kl) * inv_n.
  double dlogprob = 0.0;
  // d(loss)/d(entropy) of this token: -entropy_coeff * inv_n.
  double dentropy = 0.0;
};

GRPO_HOST_DEVICE inline double clamp_value(double x, double lo, double hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

// LibTorch's clamp backward passes the gradient where lo <= x <= hi (inclusive).
GRPO_HOST_DEVICE inline double clamp_pass(double x, double lo, double hi) {
  return (x >= lo && x <= hi) ? 1.0 : 0.0;
}

// The KL estimate and its derivative in logprob, as kl_penalty in reference_ops.cpp.
GRPO_HOST_DEVICE inline void kl_term(double logprob, double ref, KlType type, double* value,
                                     double* dvalue) {
  const double diff = logprob - ref;
  switch (type) {
    case KlType::kKl:
      *value = diff;
      *dvalue = 1.0;
      return;
    case KlType::kAbs:
      *value = diff < 0 ? -diff : diff;
      *dvalue = diff > 0 ? 1.0 : (diff < 0 ? -1.0 : 0.0);
      return;
    case KlType::kMse:
      *value = 0.5 * diff * diff;
      *dvalue = diff;
      return;
    case KlType::kLowVarKl:
      break;
  }
  // k3: kl = clamp(ref - logprob, -20, 20); clamp(exp(kl) - kl - 1, -10, 10).
  const double raw = ref - logprob;
  const double kl = clamp_value(raw, -20.0, 20.0);
  const double ek = exp(kl);
  const double kld = ek - kl - 1.0;
  *value = clamp_value(kld, -10.0, 10.0);
  *dvalue = -(ek - 1.0) * clamp_pass(raw, -20.0, 20.0) * clamp_pass(kld, -10.0, 10.0);
}

// One token's share of GRPO's token-mean loss: the PPO clipped surrogate with verl's dual clip,
// the KL term and the entropy bonus, with the derivatives of the total loss.
GRPO_HOST_DEVICE inline TokenLoss token_policy_loss(double logprob, double old_logprob, double ref,
                                                    double adv, const PolicyScalars& s) {
  TokenLoss t;
  // ratio = exp(clamp(logprob - old, -20, 20))
  const double log_ratio = logprob - old_logprob;
  const double ratio = exp(clamp_value(log_ratio, -20.0, 20.0));
  const double dratio = ratio * clamp_pass(log_ratio, -20.0, 20.0);
  const double lo = 1.0 - s.clip_low;
  const double hi = 1.0 + s.clip_high;
  const double pg1 = -adv * ratio;
  const double pg2 = -adv * clamp_value(ratio, lo, hi);
  const double d1 = -adv * dratio;
  const double d2 = -adv * dratio * clamp_pass(ratio, lo, hi);
  // maximum(pg1, pg2): autograd gives all of it to the larger one, half to each at a tie.
  const double clipped = pg1 > pg2 ? pg1 : pg2;
  const double dclipped = pg1 > pg2 ? d1 : (pg1 < pg2 ? d2 : 0.5 * (d1 + d2));
  double pg = clipped;
  double dpg = dclipped;
  if (adv < 0) {
    // Dual clip: minimum(-adv * clip_c, clipped); the constant side takes no gradient.
    const double pg3 = -adv * s.clip_c;
    pg = pg3 < clipped ? pg3 : clipped;
    dpg = clipped < pg3 ? dclipped : (clipped == pg3 ? 0.5 * dclipped : 0.0);
  }
  t.pg = pg;
  t.clipped = pg2 > pg1;
  double dkl = 0.0;
  if (s.use_kl) kl_term(logprob, ref, s.kl_type, &t.kl, &dkl);
  t.dlogprob = (dpg + s.kl_coef * dkl) * s.inv_n;
  t.dentropy = -s.entropy_coeff * s.inv_n;
  return t;
}

}  // namespace math
}  // namespace grpo::kernels
