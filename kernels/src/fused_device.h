// The kernels of the fused backend for one device type, as a table the autograd functions of
// fused_ops.cpp call through: the CPU kernels (cpu/) always, the CUDA kernels (kernels/cuda/) when
// this build has the LibTorch glue for them. Every function takes tensors on its device.
// Internal to kernels/.
#pragma once

#include <ATen/ATen.h>

#include "fused_types.h"
#include "grpo/kernels/fused.h"
#include "grpo/kernels/policy_math.h"

namespace grpo::kernels::fused {

struct DeviceKernels {
  const char* name;
  LogprobStats (*logprob_forward)(const at::Tensor& hidden, const at::Tensor& weight,
                                  const at::Tensor& tokens, double temperature,
                                  const FusedOptions& options);
  Grads (*logprob_backward)(const at::Tensor& hidden, const at::Tensor& weight,
                            const at::Tensor& tokens, double temperature, const LogprobStats& saved,
                            const at::Tensor& grad_logprobs, const at::Tensor& grad_entropy,
                            bool need_hidden, bool need_weight, const FusedOptions& options);
  PolicySums (*policy_sums)(const LogprobStats& stats, const PolicyTokens& in,
                            const math::PolicyScalars& scalars);
  EagerPolicy (*policy_loss_eager)(const at::Tensor& hidden, const at::Tensor& weight,
                                   const at::Tensor& tokens, const PolicyTokens& in,
                                   const math::PolicyScalars& scalars, double temperature,
                                   bool need_hidden, bool need_weight, const FusedOptions& options);
  RmsNormForward (*rms_norm_forward)(const at::Tensor& x, const at::Tensor& weight, double eps);
  RmsNormGrads (*rms_norm_backward)(const at::Tensor& grad_y, const at::Tensor& x,
                                    const at::Tensor& weight, const at::Tensor& rstd, bool need_x,
                                    bool need_weight);
  RouterForward (*route_forward)(const at::Tensor& logits, std::int64_t top_k, bool norm_topk_prob,
                                 const at::Tensor& valid);
  at::Tensor (*route_backward)(const RouterForward& fwd, const at::Tensor& grad_probs,
                               const at::Tensor& grad_weights, bool norm_topk_prob);
};

const DeviceKernels& cpu_kernels();

// The CUDA kernels, or nullptr when this build has no CUDA glue (GRPO_ENABLE_CUDA off, or a
// LibTorch without CUDA). Defined in no_cuda_glue.cpp or kernels/cuda/torch_glue.cpp.
const DeviceKernels* cuda_kernels();

}  // namespace grpo::kernels::fused
