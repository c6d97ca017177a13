#include <cstdio>

#include "common.cuh"

namespace grpo::kernels::cuda {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

std::string device_description(int device) {
  cudaDeviceProp prop{};
  const cudaError_t e = cudaGetDeviceProperties(&prop, device);
  if (e != cudaSuccess) return std::string("unknown device: ") + cudaGetErrorString(e);
  char buf[96];
  std::snprintf(buf, sizeof buf, ", sm_%d%d, %d SMs, %.0f GiB", prop.major, prop.minor,
                prop.multiProcessorCount,
                static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  return std::string(prop.name) + buf;
}

}  // namespace grpo::kernels::cuda
