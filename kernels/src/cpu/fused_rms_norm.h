// Fused RMSNorm forward and backward on the CPU: one pass over each row each way, OpenMP over rows.
// x [rows, D] and weight [D] of one dtype (fp32, bf16 or fp16), contiguous; statistics in
// fp32/fp64, roundings where the reference rounds (the normalized row to x's dtype before the
// weight). Internal to kernels/.
#pragma once

#include "fused_types.h"

namespace grpo::kernels::cpu {

using fused::RmsNormForward;
using fused::RmsNormGrads;

RmsNormForward rms_norm_forward(const at::Tensor& x, const at::Tensor& weight, double eps);

RmsNormGrads rms_norm_backward(const at::Tensor& grad_y, const at::Tensor& x,
                               const at::Tensor& weight, const at::Tensor& rstd, bool need_x,
                               bool need_weight);

}  // namespace grpo::kernels::cpu
