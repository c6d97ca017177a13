// The CUDA kernels of the fused backend as a thin launcher API over raw device pointers: plain
// C++, no CUDA or LibTorch header needed to call it (the stream and cuBLAS handle are opaque
// pointers). Every function enqueues work on `stream` and returns at once; errors are reported
// for the launch (cudaGetLastError / cuBLAS status), not for the asynchronous execution.
//
// Layout: row-major, contiguous. Every pointer is device memory unless said otherwise. Outputs
// are fully written (no caller-side zeroing needed) unless documented as accumulated into.
// Algorithms and chunk sizes: docs/kernels.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "grpo/kernels/policy_math.h"

struct CUstream_st;
struct cublasContext;

namespace grpo::kernels::cuda {

using Stream = CUstream_st*;        // cudaStream_t (nullptr: the legacy default stream)
using BlasHandle = cublasContext*;  // cublasHandle_t; the caller sets its stream to `stream`

enum class DType { kFloat32, kBFloat16 };

struct Status {
  int code = 0;         // 0: ok
  std::string message;  // what failed, with CUDA's / cuBLAS's own error string
  bool ok() const { return code == 0; }
};

// CUDA devices visible to this process; 0 when there is no device or no driver.
int device_count();
// "NAME, sm_XY, N SMs, M GiB", or the error.
std::string device_description(int device);

// ---- RMSNorm ----
// y = weight * round(x * rstd) with rstd = 1 / sqrt(mean(x^2) + eps) per row; x, weight, y of
// `dtype`; rstd [rows] fp32 (saved for the backward).
Status rms_norm_forward(DType dtype, const void* x, const void* weight, void* y, float* rstd,
                        std::int64_t rows, std::int64_t dim, float eps, Stream stream);

// dx [rows, dim] of dtype (nullable); dweight [dim] of dtype (nullable), summed over rows through
// dweight_accum [dim] fp32 workspace (required when dweight is wanted; zeroed here).
Status rms_norm_backward(DType dtype, const void* dy, const void* x, const void* weight,
                         const float* rstd, void* dx, void* dweight, float* dweight_accum,
                         std::int64_t rows, std::int64_t dim, Stream stream);

// ---- MoE router ----
struct RouterBuffers {
  float* probs = nullptr;                     // [n, e]
  float* weights = nullptr;                   // [n, k]
  std::int64_t* indices = nullptr;            // [n, k]
  float* topk_sums = nullptr;                 // [n]
  std::int64_t* tokens_per_expert = nullptr;  // [e], valid tokens only
  std::int64_t* expert_offsets = nullptr;     // [e + 1], all tokens
  std::int64_t* sorted_tokens = nullptr;      // [n * k]
  std::int64_t* sorted_pairs = nullptr;       // [n * k]
};

// Softmax over logits [n, e] fp32 and top-k per token (one warp per token, ties to the lower
// index), the counts, and a stable counting sort of the (token, slot) pairs by expert.
// valid: [n] bool or nullptr (all). e <= 1024.
Status router_forward(const float* logits, std::int64_t n, std::int64_t e, std::int64_t k,
                      bool norm_topk_prob, const bool* valid, const RouterBuffers& out,
                      Stream stream);

// grad_logits [n, e] fp32 from grad_probs [n, e] and grad_weights [n, k] (either nullable).
Status router_backward(const float* probs, const float* weights, const std::int64_t* indices,
                       const float* topk_sums, const float* grad_probs, const float* grad_weights,
                       std::int64_t n, std::int64_t e, std::int64_t k, bool norm_topk_prob,
                       float* grad_logits, Stream stream);

// ---- fused log-prob + GRPO loss ----
struct LogprobProblem {
  DType dtype = DType::kFloat32;         // of hidden and weight
  const void* hidden = nullptr;          // [n, h]
  const void* weight = nullptr;          // [v, h], the LM head
  const std::int64_t* tokens = nullptr;  // [n], in [0, v)
  std::int64_t n = 0, h = 0, v = 0;
  float inv_temperature = 1.0f;
};

struct Chunking {
  std::int64_t rows = 0;         // token rows per chunk
  std::int64_t vocab_block = 0;  // columns per block (block-wise paths)
};

// Workspace of each path (bytes) for a chunking; chunking_for picks one within budget_bytes.
Chunking block_chunking(const LogprobProblem& p, std::size_t budget_bytes);
Chunking eager_chunking(const LogprobProblem& p, std::size_t budget_bytes);
std::size_t forward_workspace_bytes(const LogprobProblem& p, const Chunking& c);
std::size_t backward_workspace_bytes(const LogprobProblem& p, const Chunking& c);
std::size_t eager_workspace_bytes(const LogprobProblem& p, const Chunking& c);

// Per token: logprobs, entropy, lse [n] fp32. Block-wise: [rows, vocab_block] logits at a time.
Status logprob_forward(BlasHandle blas, const LogprobProblem& p, const Chunking& c, float* logprobs,
                       float* entropy, float* lse, void* workspace, std::size_t workspace_bytes,
                       Stream stream);

// Gradients of sum_i grad_logprobs[i] logprob_i + grad_entropy[i] entropy_i (either nullable)
// from the forward's lse and entropy, recomputing the logits block by block. grad_hidden [n, h]
// and grad_weight [v, h] fp32 (either nullable) are overwritten.
Status logprob_backward(BlasHandle blas, const LogprobProblem& p, const Chunking& c,
                        const float* lse, const float* entropy, const float* grad_logprobs,
                        const float* grad_entropy, float* grad_hidden, float* grad_weight,
                        void* workspace, std::size_t workspace_bytes, Stream stream);

struct PolicyTokenInputs {
  const float* old_logprobs = nullptr;  // [n]
  const float* ref_logprobs = nullptr;  // [n], nullptr without the KL term
  const float* advantages = nullptr;    // [n]
};

// The GRPO loss terms summed over tokens into sums[4] (fp64, device: pg, kl, entropy, clipped;
// overwritten) and, when grad_hidden / grad_weight (fp32, overwritten) are not null, the loss's
// gradients, from [rows, v] logits per chunk: three matrix products in all.
Status policy_loss_eager(BlasHandle blas, const LogprobProblem& p, const Chunking& c,
                         const PolicyTokenInputs& in, const math::PolicyScalars& scalars,
                         double* sums, float* grad_hidden, float* grad_weight, void* workspace,
                         std::size_t workspace_bytes, Stream stream);

// sums[4] (fp64, device, overwritten) of the loss terms from per-token log-probs and entropies.
Status policy_sums(const float* logprobs, const float* entropy, const PolicyTokenInputs& in,
                   const math::PolicyScalars& scalars, std::int64_t n, double* sums, Stream stream);

}  // namespace grpo::kernels::cuda
