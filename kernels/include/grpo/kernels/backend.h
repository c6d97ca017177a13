// Which implementation of the trainer's hot ops to use (the `kernels` setting). LibTorch-free so
// the config parser can validate the setting without pulling in torch.
#pragma once

#include <string_view>
#include <vector>

#include "grpo/core/result.h"

namespace grpo::kernels {

// kReference: plain unfused LibTorch (kernels/src/reference_ops.cpp). Issue #7 adds fused CPU
// and CUDA backends beside it.
enum class Backend { kReference };

std::string_view to_string(Backend backend);
// "reference" -> kReference. Errors: kInvalidValue naming the accepted values.
core::Result<Backend> parse_backend(std::string_view name);
std::vector<std::string_view> backend_names();

}  // namespace grpo::kernels
