// This build has no LibTorch glue for the CUDA kernels: CUDA tensors are refused by the fused ops.
#include "fused_device.h"

namespace grpo::kernels::fused {

const DeviceKernels* cuda_kernels() {
  return nullptr;
}

}  // namespace grpo::kernels::fused
