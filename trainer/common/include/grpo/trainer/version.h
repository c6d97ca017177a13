// grpo-trainer's version (the project version).
#pragma once

#include <string_view>

namespace grpo::trainer {

std::string_view version();

// The c10d backends this build can use: "gloo", or "gloo, nccl" when built against a CUDA
// LibTorch with c10d NCCL (trainer/CMakeLists.txt detects it).
std::string_view comm_backends();

}  // namespace grpo::trainer
