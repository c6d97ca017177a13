// RMSNorm forward and backward: one warp per row; d(weight) by a column-parallel reduction.
#include "common.cuh"

namespace grpo::kernels::cuda {
namespace {

using detail::from_float;
using detail::round_to;
using detail::to_float;
using detail::warp_sum;

constexpr int kRowsPerBlock = 8;  // 8 warps

template <typename T>
__global__ void rms_norm_forward_kernel(const T* __restrict__ x, const T* __restrict__ w,
                                        T* __restrict__ y, float* __restrict__ rstd,
                                        std::int64_t rows, std::int64_t dim, float eps) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const T* xr = x + row * dim;
  float ss = 0.0f;
  for (std::int64_t j = lane; j < dim; j += 32) {
    const float v = to_float(xr[j]);
    ss += v * v;
  }
  ss = warp_sum(ss);
  const float r = rsqrtf(ss / static_cast<float>(dim) + eps);
  if (lane == 0) rstd[row] = r;
  T* yr = y + row * dim;
  for (std::int64_t j = lane; j < dim; j += 32) {
    yr[j] = from_float<T>(to_float(w[j]) * round_to<T>(to_float(xr[j]) * r));
  }
}

template <typename T>
__global__ void rms_norm_dx_kernel(const T* __restrict__ dy, const T* __restrict__ x,
                                   const T* __restrict__ w, const float* __restrict__ rstd,
                                   T* __restrict__ dx, std::int64_t rows, std::int64_t dim) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const T* xr = x + row * dim;
  const T* gr = dy + row * dim;
  const float r = rstd[row];
  float dot = 0.0f;
  for (std::int64_t j = lane; j < dim; j += 32) {
    const float dn = round_to<T>(to_float(gr[j]) * to_float(w[j]));
    dot += dn * to_float(xr[j]) * r;
  }
  const float mean = warp_sum(dot) / static_cast<float>(dim);
  T* out = dx + row * dim;
  for (std::int64_t j = lane; j < dim; j += 32) {
    const float dn = round_to<T>(to_float(gr[j]) * to_float(w[j]));
    const float xhat = to_float(xr[j]) * r;
    out[j] = from_float<T>(r * (dn - xhat * mean));
  }
}

// Column j of block (bx, by) sums dy * round(xhat) over its share of the rows.
template <typename T>
__global__ void rms_norm_dw_kernel(const T* __restrict__ dy, const T* __restrict__ x,
                                   const float* __restrict__ rstd, float* __restrict__ acc,
                                   std::int64_t rows, std::int64_t dim,
                                   std::int64_t rows_per_part) {
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= dim) return;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * rows_per_part;
  const std::int64_t r1 = r0 + rows_per_part < rows ? r0 + rows_per_part : rows;
  float s = 0.0f;
  for (std::int64_t i = r0; i < r1; ++i) {
    s += to_float(dy[i * dim + j]) * round_to<T>(to_float(x[i * dim + j]) * rstd[i]);
  }
  atomicAdd(acc + j, s);
}

template <typename T>
__global__ void convert_kernel(const float* __restrict__ in, T* __restrict__ out, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = from_float<T>(in[i]);
}

template <typename T>
Status forward(const void* x, const void* w, void* y, float* rstd, std::int64_t rows,
               std::int64_t dim, float eps, Stream stream) {
  if (rows == 0) return {};
  rms_norm_forward_kernel<T>
      <<<detail::grid_for(rows, kRowsPerBlock), 32 * kRowsPerBlock, 0, stream>>>(
          static_cast<const T*>(x), static_cast<const T*>(w), static_cast<T*>(y), rstd, rows, dim,
          eps);
  return detail::launched("rms_norm_forward");
}

template <typename T>
Status backward(const void* dy, const void* x, const void* w, const float* rstd, void* dx,
                void* dweight, float* acc, std::int64_t rows, std::int64_t dim, Stream stream) {
  if (dx != nullptr && rows > 0) {
    rms_norm_dx_kernel<T><<<detail::grid_for(rows, kRowsPerBlock), 32 * kRowsPerBlock, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<const T*>(w), rstd,
        static_cast<T*>(dx), rows, dim);
    GRPO_CUDA_TRY(detail::launched("rms_norm_backward dx"));
  }
  if (dweight == nullptr) return {};
  if (acc == nullptr) return detail::invalid("rms_norm_backward: dweight needs dweight_accum");
  GRPO_CUDA_TRY(detail::from_cuda(
      cudaMemsetAsync(acc, 0, static_cast<std::size_t>(dim) * sizeof(float), stream),
      "rms_norm_backward memset"));
  if (rows > 0) {
    const std::int64_t parts = rows < 128 ? rows : 128;
    const std::int64_t per_part = (rows + parts - 1) / parts;
    const dim3 grid(detail::grid_for(dim, 256),
                    static_cast<unsigned>((rows + per_part - 1) / per_part));
    rms_norm_dw_kernel<T><<<grid, 256, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), rstd, acc, rows, dim, per_part);
    GRPO_CUDA_TRY(detail::launched("rms_norm_backward dweight"));
  }
  convert_kernel<T>
      <<<detail::grid_for(dim, 256), 256, 0, stream>>>(acc, static_cast<T*>(dweight), dim);
  return detail::launched("rms_norm_backward convert");
}

}  // namespace

Status rms_norm_forward(DType dtype, const void* x, const void* weight, void* y, float* rstd,
                        std::int64_t rows, std::int64_t dim, float eps, Stream stream) {
  if (dtype == DType::kBFloat16) {
    return forward<__nv_bfloat16>(x, weight, y, rstd, rows, dim, eps, stream);
  }
  return forward<float>(x, weight, y, rstd, rows, dim, eps, stream);
}

Status rms_norm_backward(DType dtype, const void* dy, const void* x, const void* weight,
                         const float* rstd, void* dx, void* dweight, float* dweight_accum,
                         std::int64_t rows, std::int64_t dim, Stream stream) {
  if (dtype == DType::kBFloat16) {
    return backward<__nv_bfloat16>(dy, x, weight, rstd, dx, dweight, dweight_accum, rows, dim,
                                   stream);
  }
  return backward<float>(dy, x, weight, rstd, dx, dweight, dweight_accum, rows, dim, stream);
}

}  // namespace grpo::kernels::cuda
