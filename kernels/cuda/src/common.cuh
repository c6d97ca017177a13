// Shared helpers of the CUDA kernels: status conversion, dtype conversion, warp/block
// reductions. Internal to kernels/cuda/.
#pragma once

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "grpo/kernels/cuda/launch.h"

namespace grpo::kernels::cuda::detail {

inline Status from_cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return {};
  return Status{static_cast<int>(e), std::string(what) + ": " + cudaGetErrorString(e)};
}

// The launch of the kernels just enqueued.
inline Status launched(const char* what) {
  return from_cuda(cudaGetLastError(), what);
}

inline Status from_cublas(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return {};
  return Status{10000 + static_cast<int>(s), std::string(what) + ": " + cublasGetStatusString(s)};
}

inline Status invalid(const std::string& what) {
  return Status{-1, what};
}

#define GRPO_CUDA_TRY(expr)                    \
  do {                                         \
    ::grpo::kernels::cuda::Status s_ = (expr); \
    if (!s_.ok()) return s_;                   \
  } while (0)

inline std::size_t dtype_size(DType t) {
  return t == DType::kBFloat16 ? 2 : 4;
}

inline const void* offset(const void* p, std::int64_t elements, DType t) {
  return static_cast<const char*>(p) + static_cast<std::size_t>(elements) * dtype_size(t);
}

inline unsigned grid_for(std::int64_t items, std::int64_t per_block) {
  return static_cast<unsigned>((items + per_block - 1) / per_block);
}

__device__ inline float to_float(float v) {
  return v;
}
__device__ inline float to_float(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T>
__device__ inline T from_float(float v);
template <>
__device__ inline float from_float<float>(float v) {
  return v;
}
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}

// v rounded to T and back, as the reference's .to(dtype) does.
template <typename T>
__device__ inline float round_to(float v) {
  return to_float(from_float<T>(v));
}

template <typename V>
__device__ inline V warp_sum(V v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over a block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
template <typename V>
__device__ inline V block_sum(V v) {
  __shared__ V part[32];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  v = warp_sum(v);
  __syncthreads();  // part may still be read by a previous call
  if (lane == 0) part[warp] = v;
  __syncthreads();
  const int warps = static_cast<int>(blockDim.x / 32);
  V total = lane < warps ? part[lane] : V(0);
  return warp_sum(total);
}

}  // namespace grpo::kernels::cuda::detail
