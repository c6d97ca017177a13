// The fused token log-prob and GRPO loss on CUDA: cuBLAS products into a chunk of fp32 logits,
// then row kernels (online log-sum-exp, per-token loss, softmax gradient in place). The same
// algorithms as the CPU kernels (kernels/src/cpu/fused_logprob.cpp, docs/kernels.md).
#include <algorithm>

#include "common.cuh"

namespace grpo::kernels::cuda {
namespace {

using detail::block_sum;
using detail::from_float;

constexpr std::size_t kAlign = 256;
constexpr std::int64_t kMaxRows = 65535;  // grid.y limit of the row-parallel kernels

// ---- workspace ----

class Bump {
 public:
  Bump(void* base, std::size_t bytes) : base_(static_cast<char*>(base)), bytes_(bytes) {}
  template <typename T>
  T* take(std::int64_t count) {
    used_ = (used_ + kAlign - 1) / kAlign * kAlign;
    T* p = reinterpret_cast<T*>(base_ + used_);
    used_ += static_cast<std::size_t>(count) * sizeof(T);
    return p;
  }
  bool fits() const { return used_ <= bytes_; }

 private:
  char* base_;
  std::size_t bytes_;
  std::size_t used_ = 0;
};

std::size_t padded(std::size_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

// ---- online log-sum-exp ----

// (m, s, d): max, sum exp(z - m), sum exp(z - m) (z - m).
__device__ inline void online_add(float z, float& m, float& s, float& d) {
  if (z > m) {
    if (s > 0.0f) {
      const float a = expf(m - z);
      d = a * (d + (m - z) * s);
      s = a * s;
    }
    m = z;
  }
  const float t = z - m;
  const float e = expf(t);
  s += e;
  d += e * t;
}

template <typename V>
__device__ inline void merge(V& m, V& s, V& d, V m2, V s2, V d2) {
  if (s2 == V(0)) return;
  if (s == V(0)) {
    m = m2;
    s = s2;
    d = d2;
    return;
  }
  const V mm = m > m2 ? m : m2;
  const V a = exp(m - mm);
  const V b = exp(m2 - mm);
  d = a * (d + (m - mm) * s) + b * (d2 + (m2 - mm) * s2);
  s = a * s + b * s2;
  m = mm;
}

// Merges every thread's triple; thread 0 gets the block's.
__device__ inline void block_merge(float& m, float& s, float& d) {
  __shared__ float sm[32], ss[32], sd[32];
  for (int o = 16; o > 0; o >>= 1) {
    merge(m, s, d, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o),
          __shfl_xor_sync(0xffffffffu, d, o));
  }
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  if (lane == 0) {
    sm[warp] = m;
    ss[warp] = s;
    sd[warp] = d;
  }
  __syncthreads();
  if (warp == 0) {
    const int warps = static_cast<int>(blockDim.x / 32);
    m = lane < warps ? sm[lane] : -INFINITY;
    s = lane < warps ? ss[lane] : 0.0f;
    d = lane < warps ? sd[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) {
      merge(m, s, d, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o),
            __shfl_xor_sync(0xffffffffu, d, o));
    }
  }
}

__global__ void init_running_kernel(double* run, std::int64_t rows) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows) return;
  run[3 * i] = -INFINITY;
  run[3 * i + 1] = 0.0;
  run[3 * i + 2] = 0.0;
}

// Block per row of a [rows, cols] block of logits starting at vocabulary column v0: merges the
// block's statistics into the row's running ones (fp64) and picks the row's token's logit.
__global__ void block_stats_kernel(const float* __restrict__ z, std::int64_t cols, float scale,
                                   const std::int64_t* __restrict__ tokens, std::int64_t v0,
                                   double* __restrict__ run, float* __restrict__ target) {
  const std::int64_t row = blockIdx.x;
  const float* zr = z + row * cols;
  const std::int64_t t = tokens[row] - v0;
  float m = -INFINITY, s = 0.0f, d = 0.0f;
  for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float v = zr[j] * scale;
    online_add(v, m, s, d);
    if (j == t) target[row] = v;
  }
  block_merge(m, s, d);
  if (threadIdx.x == 0) {
    double* r = run + 3 * row;
    merge(r[0], r[1], r[2], static_cast<double>(m), static_cast<double>(s), static_cast<double>(d));
  }
}

__global__ void finalize_kernel(const double* __restrict__ run, const float* __restrict__ target,
                                std::int64_t rows, float* __restrict__ logprobs,
                                float* __restrict__ entropy, float* __restrict__ lse) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows) return;
  const double l = run[3 * i] + log(run[3 * i + 1]);
  lse[i] = static_cast<float>(l);
  entropy[i] = static_cast<float>(log(run[3 * i + 1]) - run[3 * i + 2] / run[3 * i + 1]);
  logprobs[i] = static_cast<float>(static_cast<double>(target[i]) - l);
}

// Block per full row of [rows, v] logits: lse, entropy and the token's log-prob.
__global__ void row_stats_kernel(const float* __restrict__ z, std::int64_t v, float scale,
                                 const std::int64_t* __restrict__ tokens, float* __restrict__ lse,
                                 float* __restrict__ entropy, float* __restrict__ logprobs) {
  const std::int64_t row = blockIdx.x;
  const float* zr = z + row * v;
  float m = -INFINITY, s = 0.0f, d = 0.0f;
  for (std::int64_t j = threadIdx.x; j < v; j += blockDim.x) online_add(zr[j] * scale, m, s, d);
  block_merge(m, s, d);
  if (threadIdx.x == 0) {
    const double l = static_cast<double>(m) + log(static_cast<double>(s));
    lse[row] = static_cast<float>(l);
    entropy[row] = static_cast<float>(log(static_cast<double>(s)) - static_cast<double>(d) / s);
    logprobs[row] = static_cast<float>(static_cast<double>(zr[tokens[row]] * scale) - l);
  }
}

// Per token of a chunk: the loss terms (summed into sums[4]) and the coefficients of the softmax
// gradient, a = d(loss)/d(logprob) / T and b = d(loss)/d(entropy) / T.
__global__ void token_loss_kernel(const float* __restrict__ logprobs,
                                  const float* __restrict__ entropy, PolicyTokenInputs in,
                                  math::PolicyScalars scalars, float scale, std::int64_t rows,
                                  float* __restrict__ coef_a, float* __restrict__ coef_b,
                                  double* __restrict__ sums) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  double pg = 0.0, kl = 0.0, ent = 0.0, clipped = 0.0;
  if (i < rows) {
    const math::TokenLoss t = math::token_policy_loss(
        logprobs[i], in.old_logprobs[i], in.ref_logprobs != nullptr ? in.ref_logprobs[i] : 0.0,
        in.advantages[i], scalars);
    if (coef_a != nullptr) {
      coef_a[i] = static_cast<float>(t.dlogprob * scale);
      coef_b[i] = static_cast<float>(t.dentropy * scale);
    }
    pg = t.pg;
    kl = t.kl;
    ent = entropy[i];
    clipped = t.clipped ? 1.0 : 0.0;
  }
  pg = block_sum(pg);
  kl = block_sum(kl);
  ent = block_sum(ent);
  clipped = block_sum(clipped);
  if (threadIdx.x == 0) {
    atomicAdd(sums, pg);
    atomicAdd(sums + 1, kl);
    atomicAdd(sums + 2, ent);
    atomicAdd(sums + 3, clipped);
  }
}

__global__ void coef_kernel(const float* __restrict__ grad_lp, const float* __restrict__ grad_ent,
                            float scale, std::int64_t rows, float* __restrict__ a,
                            float* __restrict__ b) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows) return;
  a[i] = grad_lp != nullptr ? grad_lp[i] * scale : 0.0f;
  b[i] = grad_ent != nullptr ? grad_ent[i] * scale : 0.0f;
}

// out = d(loss)/d(logits) of a [rows, cols] block at vocabulary column v0:
// -p (a + b (z - lse + H)) with p = exp(z - lse), plus a at the row's token. May be in place.
template <typename Out>
__global__ void softmax_grad_kernel(const float* z, Out* out, std::int64_t cols, float scale,
                                    const float* __restrict__ lse,
                                    const float* __restrict__ entropy,
                                    const float* __restrict__ coef_a,
                                    const float* __restrict__ coef_b,
                                    const std::int64_t* __restrict__ tokens, std::int64_t v0) {
  const std::int64_t row = blockIdx.y;
  const float l = lse[row], h = entropy[row], a = coef_a[row], b = coef_b[row];
  const std::int64_t t = tokens[row] - v0;
  const float* zr = z + row * cols;
  Out* o = out + row * cols;
  for (std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < cols;
       j += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float dd = zr[j] * scale - l;
    float g = -expf(dd) * (a + b * (dd + h));
    if (j == t) g += a;
    o[j] = from_float<Out>(g);
  }
}

// ---- cuBLAS ----

cudaDataType data_type(DType t) {
  return t == DType::kBFloat16 ? CUDA_R_16BF : CUDA_R_32F;
}

// Column-major C[m, n] = op(A) op(B) (+ beta C): the row-major products below are written in
// their transposed, column-major form.
Status gemm(BlasHandle blas, cublasOperation_t ta, cublasOperation_t tb, std::int64_t m,
            std::int64_t n, std::int64_t k, const void* a, cudaDataType at, std::int64_t lda,
            const void* b, cudaDataType bt, std::int64_t ldb, float beta, float* c,
            std::int64_t ldc) {
  const float alpha = 1.0f;
  return detail::from_cublas(
      cublasGemmEx(blas, ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
                   &alpha, a, at, static_cast<int>(lda), b, bt, static_cast<int>(ldb), &beta, c,
                   CUDA_R_32F, static_cast<int>(ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      "cublasGemmEx");
}

// z [r, nb] (row-major, fp32) = hidden rows [c0, c0 + r) . weight rows [v0, v0 + nb)^T.
Status logits_block(BlasHandle blas, const LogprobProblem& p, std::int64_t c0, std::int64_t r,
                    std::int64_t v0, std::int64_t nb, float* z) {
  const cudaDataType t = data_type(p.dtype);
  return gemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, nb, r, p.h,
              detail::offset(p.weight, v0 * p.h, p.dtype), t, p.h,
              detail::offset(p.hidden, c0 * p.h, p.dtype), t, p.h, 0.0f, z, nb);
}

// grad_hidden rows [c0, c0 + r) (+)= dz [r, nb] . weight rows [v0, v0 + nb).
Status grad_hidden_block(BlasHandle blas, const LogprobProblem& p, std::int64_t c0, std::int64_t r,
                         std::int64_t v0, std::int64_t nb, const void* dz, float beta,
                         float* grad_hidden) {
  const cudaDataType t = data_type(p.dtype);
  return gemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, p.h, r, nb,
              detail::offset(p.weight, v0 * p.h, p.dtype), t, p.h, dz, t, nb, beta,
              grad_hidden + c0 * p.h, p.h);
}

// grad_weight rows [v0, v0 + nb) (+)= dz [r, nb]^T . hidden rows [c0, c0 + r).
Status grad_weight_block(BlasHandle blas, const LogprobProblem& p, std::int64_t c0, std::int64_t r,
                         std::int64_t v0, std::int64_t nb, const void* dz, float beta,
                         float* grad_weight) {
  const cudaDataType t = data_type(p.dtype);
  return gemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, p.h, nb, r,
              detail::offset(p.hidden, c0 * p.h, p.dtype), t, p.h, dz, t, nb, beta,
              grad_weight + v0 * p.h, p.h);
}

// The softmax gradient of a block into the buffer the products read: in place for fp32, a bf16
// copy for bf16 inputs (cuBLAS multiplies operands of one type).
Status softmax_grad(const LogprobProblem& p, const float* z, float* z_inplace, __nv_bfloat16* z16,
                    std::int64_t r, std::int64_t cols, const float* lse, const float* entropy,
                    const float* a, const float* b, const std::int64_t* tokens, std::int64_t v0,
                    Stream stream, const void** dz) {
  const unsigned gx = std::min<unsigned>(detail::grid_for(cols, 256), 64);
  const dim3 grid(gx, static_cast<unsigned>(r));
  if (p.dtype == DType::kBFloat16) {
    softmax_grad_kernel<__nv_bfloat16>
        <<<grid, 256, 0, stream>>>(z, z16, cols, p.inv_temperature, lse, entropy, a, b, tokens, v0);
    *dz = z16;
  } else {
    softmax_grad_kernel<float><<<grid, 256, 0, stream>>>(z, z_inplace, cols, p.inv_temperature, lse,
                                                         entropy, a, b, tokens, v0);
    *dz = z_inplace;
  }
  return detail::launched("softmax_grad");
}

Status check(const LogprobProblem& p, const Chunking& c) {
  if (p.n < 0 || p.h <= 0 || p.v <= 0 || c.rows <= 0 || c.rows > kMaxRows || c.vocab_block <= 0) {
    return detail::invalid("fused log-prob (CUDA): bad sizes or chunking");
  }
  return {};
}

Chunking chunking(const LogprobProblem& p, std::size_t budget, std::int64_t cols,
                  std::size_t per_row) {
  Chunking c;
  c.vocab_block = cols;
  const std::int64_t rows = static_cast<std::int64_t>(budget / std::max<std::size_t>(per_row, 1));
  c.rows = std::max<std::int64_t>(1, std::min({rows, std::max<std::int64_t>(p.n, 1), kMaxRows}));
  return c;
}

std::size_t bf16_extra(const LogprobProblem& p, std::int64_t cols) {
  return p.dtype == DType::kBFloat16 ? static_cast<std::size_t>(cols) * 2 : 0;
}

}  // namespace

Chunking block_chunking(const LogprobProblem& p, std::size_t budget_bytes) {
  const std::int64_t vb = std::min<std::int64_t>(p.v, 32768);
  return chunking(p, budget_bytes, vb, static_cast<std::size_t>(vb) * 4 + bf16_extra(p, vb) + 64);
}

Chunking eager_chunking(const LogprobProblem& p, std::size_t budget_bytes) {
  return chunking(p, budget_bytes, p.v,
                  static_cast<std::size_t>(p.v) * 4 + bf16_extra(p, p.v) + 64);
}

std::size_t forward_workspace_bytes(const LogprobProblem& p, const Chunking& c) {
  (void)p;
  return padded(static_cast<std::size_t>(c.rows * c.vocab_block) * 4) +
         padded(static_cast<std::size_t>(c.rows) * 24) +
         padded(static_cast<std::size_t>(c.rows) * 4);
}

std::size_t backward_workspace_bytes(const LogprobProblem& p, const Chunking& c) {
  return padded(static_cast<std::size_t>(c.rows * c.vocab_block) * 4) +
         padded(static_cast<std::size_t>(c.rows) * bf16_extra(p, c.vocab_block)) +
         2 * padded(static_cast<std::size_t>(c.rows) * 4);
}

std::size_t eager_workspace_bytes(const LogprobProblem& p, const Chunking& c) {
  return padded(static_cast<std::size_t>(c.rows * p.v) * 4) +
         padded(static_cast<std::size_t>(c.rows) * bf16_extra(p, p.v)) +
         5 * padded(static_cast<std::size_t>(c.rows) * 4);
}

Status logprob_forward(BlasHandle blas, const LogprobProblem& p, const Chunking& c, float* logprobs,
                       float* entropy, float* lse, void* workspace, std::size_t workspace_bytes,
                       Stream stream) {
  GRPO_CUDA_TRY(check(p, c));
  if (workspace_bytes < forward_workspace_bytes(p, c)) {
    return detail::invalid("logprob_forward: workspace too small");
  }
  GRPO_CUDA_TRY(detail::from_cublas(cublasSetStream(blas, stream), "cublasSetStream"));
  Bump ws(workspace, workspace_bytes);
  float* z = ws.take<float>(c.rows * c.vocab_block);
  double* run = ws.take<double>(3 * c.rows);
  float* target = ws.take<float>(c.rows);
  if (!ws.fits()) return detail::invalid("logprob_forward: workspace too small");
  for (std::int64_t c0 = 0; c0 < p.n; c0 += c.rows) {
    const std::int64_t r = std::min(c.rows, p.n - c0);
    init_running_kernel<<<detail::grid_for(r, 256), 256, 0, stream>>>(run, r);
    GRPO_CUDA_TRY(detail::launched("logprob_forward init"));
    for (std::int64_t v0 = 0; v0 < p.v; v0 += c.vocab_block) {
      const std::int64_t nb = std::min(c.vocab_block, p.v - v0);
      GRPO_CUDA_TRY(logits_block(blas, p, c0, r, v0, nb, z));
      block_stats_kernel<<<static_cast<unsigned>(r), 256, 0, stream>>>(
          z, nb, p.inv_temperature, p.tokens + c0, v0, run, target);
      GRPO_CUDA_TRY(detail::launched("logprob_forward stats"));
    }
    finalize_kernel<<<detail::grid_for(r, 256), 256, 0, stream>>>(run, target, r, logprobs + c0,
                                                                  entropy + c0, lse + c0);
    GRPO_CUDA_TRY(detail::launched("logprob_forward finalize"));
  }
  return {};
}

Status logprob_backward(BlasHandle blas, const LogprobProblem& p, const Chunking& c,
                        const float* lse, const float* entropy, const float* grad_logprobs,
                        const float* grad_entropy, float* grad_hidden, float* grad_weight,
                        void* workspace, std::size_t workspace_bytes, Stream stream) {
  GRPO_CUDA_TRY(check(p, c));
  if (workspace_bytes < backward_workspace_bytes(p, c)) {
    return detail::invalid("logprob_backward: workspace too small");
  }
  GRPO_CUDA_TRY(detail::from_cublas(cublasSetStream(blas, stream), "cublasSetStream"));
  if (grad_hidden != nullptr) {
    GRPO_CUDA_TRY(detail::from_cuda(
        cudaMemsetAsync(grad_hidden, 0, static_cast<std::size_t>(p.n * p.h) * 4, stream),
        "logprob_backward memset"));
  }
  if (grad_weight != nullptr) {
    GRPO_CUDA_TRY(detail::from_cuda(
        cudaMemsetAsync(grad_weight, 0, static_cast<std::size_t>(p.v * p.h) * 4, stream),
        "logprob_backward memset"));
  }
  if (grad_hidden == nullptr && grad_weight == nullptr) return {};
  Bump ws(workspace, workspace_bytes);
  float* z = ws.take<float>(c.rows * c.vocab_block);
  __nv_bfloat16* z16 =
      p.dtype == DType::kBFloat16 ? ws.take<__nv_bfloat16>(c.rows * c.vocab_block) : nullptr;
  float* a = ws.take<float>(c.rows);
  float* b = ws.take<float>(c.rows);
  if (!ws.fits()) return detail::invalid("logprob_backward: workspace too small");
  for (std::int64_t c0 = 0; c0 < p.n; c0 += c.rows) {
    const std::int64_t r = std::min(c.rows, p.n - c0);
    coef_kernel<<<detail::grid_for(r, 256), 256, 0, stream>>>(
        grad_logprobs != nullptr ? grad_logprobs + c0 : nullptr,
        grad_entropy != nullptr ? grad_entropy + c0 : nullptr, p.inv_temperature, r, a, b);
    GRPO_CUDA_TRY(detail::launched("logprob_backward coefficients"));
    for (std::int64_t v0 = 0; v0 < p.v; v0 += c.vocab_block) {
      const std::int64_t nb = std::min(c.vocab_block, p.v - v0);
      GRPO_CUDA_TRY(logits_block(blas, p, c0, r, v0, nb, z));
      const void* dz = nullptr;
      GRPO_CUDA_TRY(softmax_grad(p, z, z, z16, r, nb, lse + c0, entropy + c0, a, b, p.tokens + c0,
                                 v0, stream, &dz));
      if (grad_hidden != nullptr) {
        GRPO_CUDA_TRY(grad_hidden_block(blas, p, c0, r, v0, nb, dz, 1.0f, grad_hidden));
      }
      if (grad_weight != nullptr) {
        GRPO_CUDA_TRY(grad_weight_block(blas, p, c0, r, v0, nb, dz, 1.0f, grad_weight));
      }
    }
  }
  return {};
}

Status policy_loss_eager(BlasHandle blas, const LogprobProblem& p, const Chunking& c,
                         const PolicyTokenInputs& in, const math::PolicyScalars& scalars,
                         double* sums, float* grad_hidden, float* grad_weight, void* workspace,
                         std::size_t workspace_bytes, Stream stream) {
  GRPO_CUDA_TRY(check(p, c));
  if (workspace_bytes < eager_workspace_bytes(p, c)) {
    return detail::invalid("policy_loss_eager: workspace too small");
  }
  GRPO_CUDA_TRY(detail::from_cublas(cublasSetStream(blas, stream), "cublasSetStream"));
  GRPO_CUDA_TRY(detail::from_cuda(cudaMemsetAsync(sums, 0, 4 * sizeof(double), stream),
                                  "policy_loss_eager memset"));
  Bump ws(workspace, workspace_bytes);
  float* z = ws.take<float>(c.rows * p.v);
  __nv_bfloat16* z16 = p.dtype == DType::kBFloat16 ? ws.take<__nv_bfloat16>(c.rows * p.v) : nullptr;
  float* lse = ws.take<float>(c.rows);
  float* ent = ws.take<float>(c.rows);
  float* lp = ws.take<float>(c.rows);
  float* a = ws.take<float>(c.rows);
  float* b = ws.take<float>(c.rows);
  if (!ws.fits()) return detail::invalid("policy_loss_eager: workspace too small");
  const bool grads = grad_hidden != nullptr || grad_weight != nullptr;
  for (std::int64_t c0 = 0; c0 < p.n; c0 += c.rows) {
    const std::int64_t r = std::min(c.rows, p.n - c0);
    GRPO_CUDA_TRY(logits_block(blas, p, c0, r, 0, p.v, z));
    row_stats_kernel<<<static_cast<unsigned>(r), 512, 0, stream>>>(z, p.v, p.inv_temperature,
                                                                   p.tokens + c0, lse, ent, lp);
    GRPO_CUDA_TRY(detail::launched("policy_loss_eager stats"));
    PolicyTokenInputs chunk;
    chunk.old_logprobs = in.old_logprobs + c0;
    chunk.ref_logprobs = in.ref_logprobs != nullptr ? in.ref_logprobs + c0 : nullptr;
    chunk.advantages = in.advantages + c0;
    token_loss_kernel<<<detail::grid_for(r, 256), 256, 0, stream>>>(
        lp, ent, chunk, scalars, p.inv_temperature, r, a, b, sums);
    GRPO_CUDA_TRY(detail::launched("policy_loss_eager loss"));
    if (!grads) continue;
    const void* dz = nullptr;
    GRPO_CUDA_TRY(
        softmax_grad(p, z, z, z16, r, p.v, lse, ent, a, b, p.tokens + c0, 0, stream, &dz));
    if (grad_hidden != nullptr) {
      GRPO_CUDA_TRY(grad_hidden_block(blas, p, c0, r, 0, p.v, dz, 0.0f, grad_hidden));
    }
    if (grad_weight != nullptr) {
      GRPO_CUDA_TRY(
          grad_weight_block(blas, p, c0, r, 0, p.v, dz, c0 == 0 ? 0.0f : 1.0f, grad_weight));
    }
  }
  if (p.n == 0 && grad_weight != nullptr) {
    GRPO_CUDA_TRY(detail::from_cuda(
        cudaMemsetAsync(grad_weight, 0, static_cast<std::size_t>(p.v * p.h) * 4, stream),
        "policy_loss_eager memset"));
  }
  return {};
}

Status policy_sums(const float* logprobs, const float* entropy, const PolicyTokenInputs& in,
                   const math::PolicyScalars& scalars, std::int64_t n, double* sums,
                   Stream stream) {
  GRPO_CUDA_TRY(detail::from_cuda(cudaMemsetAsync(sums, 0, 4 * sizeof(double), stream),
                                  "policy_sums memset"));
  if (n == 0) return {};
  token_loss_kernel<<<detail::grid_for(n, 256), 256, 0, stream>>>(logprobs, entropy, in, scalars,
                                                                  1.0f, n, nullptr, nullptr, sums);
  return detail::launched("policy_sums");
}

}  // namespace grpo::kernels::cuda
