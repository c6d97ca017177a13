// MoE router: softmax + top-k (one warp per token), counts by atomics, offsets by a scan, and a
// stable scatter by expert (one block per expert, in token order).
#include "common.cuh"

namespace grpo::kernels::cuda {
namespace {

using detail::warp_max;
using detail::warp_sum;

constexpr int kWarpsPerBlock = 8;
constexpr int kMaxExperts = 1024;  // 32 experts per lane

__global__ void router_topk_kernel(const float* __restrict__ logits, std::int64_t n, std::int64_t e,
                                   std::int64_t k, bool norm, const bool* __restrict__ valid,
                                   float* __restrict__ probs, float* __restrict__ weights,
                                   std::int64_t* __restrict__ indices, float* __restrict__ sums,
                                   unsigned long long* __restrict__ all,
                                   unsigned long long* __restrict__ counted) {
  const std::int64_t row =
      static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= n) return;
  const float* z = logits + row * e;
  float* p = probs + row * e;
  float m = -INFINITY;
  for (std::int64_t j = lane; j < e; j += 32) m = fmaxf(m, z[j]);
  m = warp_max(m);
  float s = 0.0f;
  for (std::int64_t j = lane; j < e; j += 32) s += expf(z[j] - m);
  s = warp_sum(s);
  const float inv = 1.0f / s;
  for (std::int64_t j = lane; j < e; j += 32) p[j] = expf(z[j] - m) * inv;
  __syncwarp();

  // k rounds of a warp arg-max over the experts not yet taken (ties: the lower index).
  unsigned taken = 0;  // bit t: expert lane + 32 t
  float picked = 0.0f;
  for (std::int64_t slot = 0; slot < k; ++slot) {
    float best = -1.0f;
    int best_j = 0x7fffffff;
    for (int t = 0; lane + 32 * t < e; ++t) {
      const int j = lane + 32 * t;
      if ((taken >> t) & 1u) continue;
      if (p[j] > best) {
        best = p[j];
        best_j = j;
      }
    }
    for (int o = 16; o > 0; o >>= 1) {
      const float ob = __shfl_xor_sync(0xffffffffu, best, o);
      const int oj = __shfl_xor_sync(0xffffffffu, best_j, o);
      if (ob > best || (ob == best && oj < best_j)) {
        best = ob;
        best_j = oj;
      }
    }
    if (best_j >= e) best_j = 0;  // only with NaN logits: keep the index in range
    if (best_j % 32 == lane) taken |= 1u << (best_j / 32);
    picked += best;
    if (lane == 0) {
      indices[row * k + slot] = best_j;
      weights[row * k + slot] = best;
      atomicAdd(all + best_j, 1ull);
      if (valid == nullptr || valid[row]) atomicAdd(counted + best_j, 1ull);
    }
  }
  if (lane == 0) sums[row] = picked;
  __syncwarp();  // lane 0's weights are visible to the whole warp
  if (norm) {
    for (std::int64_t slot = lane; slot < k; slot += 32) weights[row * k + slot] /= picked;
  }
}

// In place: offsets[1..e] hold the counts of all pairs; make them the inclusive prefix sums.
__global__ void router_scan_kernel(std::int64_t* offsets, std::int64_t e) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  offsets[0] = 0;
  for (std::int64_t j = 1; j <= e; ++j) offsets[j] += offsets[j - 1];
}

// Block per expert: the pairs of this expert, in pair order, at offsets[expert]...
__global__ void router_scatter_kernel(const std::int64_t* __restrict__ indices, std::int64_t pairs,
                                      std::int64_t k, const std::int64_t* __restrict__ offsets,
                                      std::int64_t* __restrict__ sorted_tokens,
                                      std::int64_t* __restrict__ sorted_pairs) {
  __shared__ int warp_totals[32];
  const std::int64_t expert = blockIdx.x;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
  std::int64_t base = offsets[expert];
  for (std::int64_t start = 0; start < pairs; start += blockDim.x) {
    const std::int64_t pair = start + threadIdx.x;
    const bool mine = pair < pairs && indices[pair] == expert;
    const unsigned ballot = __ballot_sync(0xffffffffu, mine);
    const int rank_in_warp = __popc(ballot & ((1u << lane) - 1u));
    if (lane == 0) warp_totals[warp] = __popc(ballot);
    __syncthreads();
    int before = 0;
    int total = 0;
    for (int w = 0; w < warps; ++w) {
      if (w < warp) before += warp_totals[w];
      total += warp_totals[w];
    }
    if (mine) {
      const std::int64_t pos = base + before + rank_in_warp;
      sorted_tokens[pos] = pair / k;
      sorted_pairs[pos] = pair;
    }
    base += total;
    __syncthreads();
  }
}

__global__ void router_backward_kernel(const float* __restrict__ probs,
                                       const float* __restrict__ weights,
                                       const std::int64_t* __restrict__ indices,
                                       const float* __restrict__ sums, const float* __restrict__ gp,
                                       const float* __restrict__ gw, std::int64_t n, std::int64_t e,
                                       std::int64_t k, bool norm, float* __restrict__ grad) {
  const std::int64_t row =
      static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= n) return;
  const float* p = probs + row * e;
  float* t = grad + row * e;  // the total gradient of each probability, then d(logits)
  for (std::int64_t j = lane; j < e; j += 32) t[j] = gp != nullptr ? gp[row * e + j] : 0.0f;
  __syncwarp();
  if (gw != nullptr) {
    double dot = 0.0;
    if (norm) {
      for (std::int64_t s = lane; s < k; s += 32) {
        dot += static_cast<double>(gw[row * k + s]) * weights[row * k + s];
      }
      dot = warp_sum(dot);
    }
    const double inv = norm ? 1.0 / sums[row] : 1.0;
    for (std::int64_t s = lane; s < k; s += 32) {  // distinct experts: no conflicts
      t[indices[row * k + s]] += static_cast<float>((gw[row * k + s] - dot) * inv);
    }
    __syncwarp();
  }
  // dz_j = p_j (t_j sum_{l != j} p_l - sum_{l != j} p_l t_l): no 1 - p_j cancellation.
  double q = 0.0;
  double pt = 0.0;
  for (std::int64_t j = lane; j < e; j += 32) {
    q += p[j];
    pt += static_cast<double>(p[j]) * t[j];
  }
  q = warp_sum(q);
  pt = warp_sum(pt);
  __syncwarp();
  for (std::int64_t j = lane; j < e; j += 32) {
    const double pj = p[j];
    const double tj = t[j];
    t[j] = static_cast<float>(pj * (tj * (q - pj) - (pt - pj * tj)));
  }
}

}  // namespace

Status router_forward(const float* logits, std::int64_t n, std::int64_t e, std::int64_t k,
                      bool norm_topk_prob, const bool* valid, const RouterBuffers& out,
                      Stream stream) {
  if (e < 1 || e > kMaxExperts || k < 1 || k > e) {
    return detail::invalid("router_forward: need 1 <= k <= e <= 1024");
  }
  GRPO_CUDA_TRY(detail::from_cuda(
      cudaMemsetAsync(out.expert_offsets, 0, static_cast<std::size_t>(e + 1) * 8, stream),
      "router_forward memset"));
  GRPO_CUDA_TRY(detail::from_cuda(
      cudaMemsetAsync(out.tokens_per_expert, 0, static_cast<std::size_t>(e) * 8, stream),
      "router_forward memset"));
  if (n > 0) {
    router_topk_kernel<<<detail::grid_for(n, kWarpsPerBlock), 32 * kWarpsPerBlock, 0, stream>>>(
        logits, n, e, k, norm_topk_prob, valid, out.probs, out.weights, out.indices, out.topk_sums,
        reinterpret_cast<unsigned long long*>(out.expert_offsets + 1),
        reinterpret_cast<unsigned long long*>(out.tokens_per_expert));
    GRPO_CUDA_TRY(detail::launched("router_forward top-k"));
  }
  router_scan_kernel<<<1, 32, 0, stream>>>(out.expert_offsets, e);
  GRPO_CUDA_TRY(detail::launched("router_forward scan"));
  if (n == 0) return {};
  router_scatter_kernel<<<static_cast<unsigned>(e), 256, 0, stream>>>(
      out.indices, n * k, k, out.expert_offsets, out.sorted_tokens, out.sorted_pairs);
  return detail::launched("router_forward scatter");
}

Status router_backward(const float* probs, const float* weights, const std::int64_t* indices,
                       const float* topk_sums, const float* grad_probs, const float* grad_weights,
                       std::int64_t n, std::int64_t e, std::int64_t k, bool norm_topk_prob,
                       float* grad_logits, Stream stream) {
  if (n == 0) return {};
  router_backward_kernel<<<detail::grid_for(n, kWarpsPerBlock), 32 * kWarpsPerBlock, 0, stream>>>(
      probs, weights, indices, topk_sums, grad_probs, grad_weights, n, e, k, norm_topk_prob,
      grad_logits);
  return detail::launched("router_backward");
}

}  // namespace grpo::kernels::cuda
