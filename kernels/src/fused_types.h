// The tensors the fused kernels exchange with the autograd functions of fused_ops.cpp, the same
// for the CPU kernels (cpu/) and the CUDA glue (cuda/): device-agnostic value types.
// Internal to kernels/.
#pragma once

#include <ATen/ATen.h>

namespace grpo::kernels::fused {

// Per token: log p(token), the entropy and the log-sum-exp of z = hidden @ weight^T / temperature.
struct LogprobStats {
  at::Tensor logprobs;  // [N] fp32
  at::Tensor entropy;   // [N] fp32
  at::Tensor lse;       // [N] fp32
};

struct Grads {
  at::Tensor hidden;  // [N, H] fp32, undefined unless asked for
  at::Tensor weight;  // [V, H] fp32, undefined unless asked for
};

// The per-token inputs of the GRPO loss, fp32 contiguous [N] (ref undefined without the KL term).
struct PolicyTokens {
  at::Tensor old_logprobs;
  at::Tensor ref_logprobs;
  at::Tensor advantages;
};

// Sums over the tokens of the per-token terms of the loss (math::token_policy_loss).
struct PolicySums {
  double pg = 0.0;
  double kl = 0.0;
  double entropy = 0.0;
  double clipped = 0.0;
};

struct EagerPolicy {
  PolicySums sums;
  Grads grads;
};

struct RmsNormForward {
  at::Tensor y;     // [rows, D], x's dtype
  at::Tensor rstd;  // [rows] fp32: 1 / sqrt(mean(x^2) + eps)
};

struct RmsNormGrads {
  at::Tensor x;       // [rows, D], undefined unless asked for
  at::Tensor weight;  // [D], undefined unless asked for
};

struct RouterForward {
  at::Tensor probs;              // [N, E] fp32
  at::Tensor weights;            // [N, k] fp32
  at::Tensor indices;            // [N, k] int64
  at::Tensor topk_sums;          // [N] fp32: sum of the selected probabilities
  at::Tensor tokens_per_expert;  // [E] int64 over the valid tokens
  at::Tensor expert_offsets;     // [E + 1] int64 over all tokens
  at::Tensor sorted_tokens;      // [N * k] int64
  at::Tensor sorted_pairs;       // [N * k] int64
};

}  // namespace grpo::kernels::fused
