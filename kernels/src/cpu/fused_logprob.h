// The fused token log-prob and GRPO loss on the CPU (ATen GEMMs + OpenMP row passes): hidden
// [N, H], weight (the LM head) [V, H], tokens [N] int64 contiguous in [0, V). bf16/fp16 inputs are
// computed on fp32 copies; results and gradients are fp32. No function here holds an [N, V]
// tensor; see docs/kernels.md for the algorithms.
// Internal to kernels/.
#pragma once

#include <ATen/ATen.h>

#include "fused_types.h"
#include "grpo/kernels/fused.h"
#include "grpo/kernels/policy_math.h"

namespace grpo::kernels::cpu {

using fused::EagerPolicy;
using fused::Grads;
using fused::LogprobStats;
using fused::PolicySums;
using fused::PolicyTokens;

// Forward only: token chunks x vocabulary blocks, online log-sum-exp; holds [rows, vocab_block].
LogprobStats logprob_forward(const at::Tensor& hidden, const at::Tensor& weight,
                             const at::Tensor& tokens, double temperature,
                             const FusedOptions& options);

// Gradients of sum_i grad_logprobs[i] * logprob_i + grad_entropy[i] * entropy_i (an undefined one
// counts as zeros), recomputing the logits block by block from the forward's lse and entropy.
Grads logprob_backward(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& tokens,
                       double temperature, const LogprobStats& saved,
                       const at::Tensor& grad_logprobs, const at::Tensor& grad_entropy,
                       bool need_hidden, bool need_weight, const FusedOptions& options);

PolicySums policy_sums(const LogprobStats& stats, const PolicyTokens& in,
                       const math::PolicyScalars& scalars);

// The GRPO loss and, in the same pass, its gradients (the loss is a scalar, so they are known in
// the forward): per chunk of tokens, the [rows, V] logits are computed once, reduced, turned into
// their gradient in place and multiplied back. Three matrix products in all.
EagerPolicy policy_loss_eager(const at::Tensor& hidden, const at::Tensor& weight,
                              const at::Tensor& tokens, const PolicyTokens& in,
                              const math::PolicyScalars& scalars, double temperature,
                              bool need_hidden, bool need_weight, const FusedOptions& options);

// Rows per chunk of each path for a vocabulary of v and n tokens.
std::int64_t grad_chunk_rows(std::int64_t v, std::int64_t n, const FusedOptions& options);
std::int64_t block_chunk_rows(std::int64_t block, std::int64_t n, const FusedOptions& options);

}  // namespace grpo::kernels::cpu
