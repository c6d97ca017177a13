// The fused MoE router on the CPU: softmax over the experts and top-k in one pass per token, the
// per-expert counts, and a stable counting sort that groups the (token, slot) pairs by expert.
// Internal to kernels/.
#pragma once

#include <cstdint>

#include "fused_types.h"

namespace grpo::kernels::cpu {

using fused::RouterForward;

// logits [N, E] fp32 contiguous; valid [N] bool or undefined. Ties pick the lower expert index.
RouterForward route_forward(const at::Tensor& logits, std::int64_t top_k, bool norm_topk_prob,
                            const at::Tensor& valid);

// d(loss)/d(logits) [N, E] fp32 from the gradients of probs and weights (either may be undefined).
at::Tensor route_backward(const RouterForward& fwd, const at::Tensor& grad_probs,
                          const at::Tensor& grad_weights, bool norm_topk_prob);

}  // namespace grpo::kernels::cpu
