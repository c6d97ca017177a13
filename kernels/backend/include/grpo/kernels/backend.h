// Which implementation of the trainer's hot ops to use (the `kernels` setting). LibTorch-free so
// the config parser can validate the setting without pulling in torch.
#pragma once

#include <string_view>
#include <vector>

#include "grpo/core/result.h"

namespace grpo::kernels {

// kReference: plain unfused LibTorch (kernels/src/reference_ops.cpp).
// kFused: fused kernels (docs/kernels.md): ATen + OpenMP on the CPU (kernels/src/fused_*.cpp), the
// CUDA kernels of kernels/cuda/ for CUDA tensors when built with them. The default.
enum class Backend { kReference, kFused };

std::string_view to_string(Backend backend);
// "reference" -> kReference, "fused" -> kFused. Errors: kInvalidValue naming the accepted values.
core::Result<Backend> parse_backend(std::string_view name);
std::vector<std::string_view> backend_names();

}  // namespace grpo::kernels
