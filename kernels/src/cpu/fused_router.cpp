#include "cpu/fused_router.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace grpo::kernels::cpu {

RouterForward route_forward(const at::Tensor& logits, std::int64_t top_k, bool norm_topk_prob,
                            const at::Tensor& valid) {
  TORCH_CHECK(logits.dim() == 2 && logits.scalar_type() == at::kFloat && logits.is_contiguous(),
              "fused route (CPU): router logits [N, E] fp32 contiguous expected");
  const std::int64_t n = logits.size(0);
  const std::int64_t ne = logits.size(1);
  TORCH_CHECK(top_k >= 1 && top_k <= ne, "fused route: top_k must be in [1, ", ne, "], got ",
              top_k);
  at::Tensor valid_c;
  if (valid.defined()) {
    TORCH_CHECK(valid.dim() == 1 && valid.size(0) == n, "fused route: valid [N] expected");
    valid_c = valid.to(at::kBool).contiguous();
  }
  const auto long_opts = logits.options().dtype(at::kLong);
  RouterForward out;
  out.probs = at::empty({n, ne}, logits.options());
  out.weights = at::empty({n, top_k}, logits.options());
  out.indices = at::empty({n, top_k}, long_opts);
  out.topk_sums = at::empty({n}, logits.options());
  out.tokens_per_expert = at::empty({ne}, long_opts);
  out.expert_offsets = at::empty({ne + 1}, long_opts);
  out.sorted_tokens = at::empty({n * top_k}, long_opts);
  out.sorted_pairs = at::empty({n * top_k}, long_opts);

  const float* z = logits.data_ptr<float>();
  const bool* ok = valid_c.defined() ? valid_c.data_ptr<bool>() : nullptr;
  float* probs = out.probs.data_ptr<float>();
  float* weights = out.weights.data_ptr<float>();
  std::int64_t* idx = out.indices.data_ptr<std::int64_t>();
  float* sums = out.topk_sums.data_ptr<float>();

  // Pass 1, per part of the tokens: softmax, top-k, and the part's histograms (all pairs, and
  // the pairs of valid tokens).
  const std::int64_t parts =
      std::max<std::int64_t>(1, std::min<std::int64_t>(at::get_num_threads(), (n + 255) / 256));
  std::vector<std::int64_t> hist(static_cast<std::size_t>(parts * ne), 0);
  std::vector<std::int64_t> valid_hist(static_cast<std::size_t>(parts * ne), 0);
  at::parallel_for(0, parts, 1, [&](std::int64_t pb, std::int64_t pe) {
    for (std::int64_t p = pb; p < pe; ++p) {
      std::int64_t* h = hist.data() + p * ne;
      std::int64_t* vh = valid_hist.data() + p * ne;
      for (std::int64_t i = n * p / parts; i < n * (p + 1) / parts; ++i) {
        const float* zr = z + i * ne;
        float* pr = probs + i * ne;
        float m = zr[0];
        for (std::int64_t e = 1; e < ne; ++e) m = std::max(m, zr[e]);
        double s = 0.0;
        for (std::int64_t e = 0; e < ne; ++e) {
          pr[e] = std::exp(zr[e] - m);
          s += pr[e];
        }
        const float inv = static_cast<float>(1.0 / s);
        for (std::int64_t e = 0; e < ne; ++e) pr[e] *= inv;
        // Top-k by repeated selection (k is small): the largest not yet chosen, lowest index first.
        std::int64_t* ir = idx + i * top_k;
        float* wr = weights + i * top_k;
        float picked = 0.0f;
        for (std::int64_t slot = 0; slot < top_k; ++slot) {
          std::int64_t best = -1;
          for (std::int64_t e = 0; e < ne; ++e) {
            bool taken = false;
            for (std::int64_t q = 0; q < slot; ++q) taken = taken || ir[q] == e;
            if (!taken && (best < 0 || pr[e] > pr[best])) best = e;
          }
          ir[slot] = best;
          wr[slot] = pr[best];
          picked += pr[best];
          ++h[best];
          if (ok == nullptr || ok[i]) ++vh[best];
        }
        sums[i] = picked;
        if (norm_topk_prob) {
          for (std::int64_t slot = 0; slot < top_k; ++slot) wr[slot] /= picked;
        }
      }
    }
  });

  // Offsets: expert-major, then part-major, so each part scatters its pairs into its own range
  // (a stable counting sort: token order within an expert).
  std::int64_t* counts = out.tokens_per_expert.data_ptr<std::int64_t>();
  std::int64_t* offsets = out.expert_offsets.data_ptr<std::int64_t>();
  std::vector<std::int64_t> start(static_cast<std::size_t>(parts * ne));
  std::int64_t running = 0;
  for (std::int64_t e = 0; e < ne; ++e) {
    offsets[e] = running;
    std::int64_t c = 0;
    for (std::int64_t p = 0; p < parts; ++p) {
      start[static_cast<std::size_t>(p * ne + e)] = running;
      running += hist[static_cast<std::size_t>(p * ne + e)];
      c += valid_hist[static_cast<std::size_t>(p * ne + e)];
    }
    counts[e] = c;
  }
  offsets[ne] = running;

  std::int64_t* sorted_tokens = out.sorted_tokens.data_ptr<std::int64_t>();
  std::int64_t* sorted_pairs = out.sorted_pairs.data_ptr<std::int64_t>();
  at::parallel_for(0, parts, 1, [&](std::int64_t pb, std::int64_t pe) {
    for (std::int64_t p = pb; p < pe; ++p) {
      std::int64_t* next = start.data() + p * ne;
      for (std::int64_t i = n * p / parts; i < n * (p + 1) / parts; ++i) {
        for (std::int64_t slot = 0; slot < top_k; ++slot) {
          const std::int64_t pos = next[idx[i * top_k + slot]]++;
          sorted_tokens[pos] = i;
          sorted_pairs[pos] = i * top_k + slot;
        }
      }
    }
  });
  return out;
}

at::Tensor route_backward(const RouterForward& fwd, const at::Tensor& grad_probs,
                          const at::Tensor& grad_weights, bool norm_topk_prob) {
  const std::int64_t n = fwd.probs.size(0);
  const std::int64_t ne = fwd.probs.size(1);
  const std::int64_t k = fwd.indices.size(1);
  at::Tensor gp = grad_probs.defined() ? grad_probs.to(at::kFloat).contiguous() : at::Tensor();
  at::Tensor gw = grad_weights.defined() ? grad_weights.to(at::kFloat).contiguous() : at::Tensor();
  at::Tensor grad = at::empty({n, ne}, fwd.probs.options());
  const float* probs = fwd.probs.data_ptr<float>();
  const float* weights = fwd.weights.data_ptr<float>();
  const std::int64_t* idx = fwd.indices.data_ptr<std::int64_t>();
  const float* sums = fwd.topk_sums.data_ptr<float>();
  const float* gpp = gp.defined() ? gp.data_ptr<float>() : nullptr;
  const float* gwp = gw.defined() ? gw.data_ptr<float>() : nullptr;
  float* out = grad.data_ptr<float>();
  at::parallel_for(0, n, 256, [&](std::int64_t b, std::int64_t e) {
    std::vector<double> total(static_cast<std::size_t>(ne));
    for (std::int64_t i = b; i < e; ++i) {
      for (std::int64_t j = 0; j < ne; ++j) {
        total[static_cast<std::size_t>(j)] = gpp != nullptr ? gpp[i * ne + j] : 0.0;
      }
      if (gwp != nullptr) {
        // weights w_s = p_s / S when normalized: dL/dp_r = (g_r - sum_s g_s w_s) / S.
        double dot = 0.0;
        if (norm_topk_prob) {
          for (std::int64_t s = 0; s < k; ++s) dot += gwp[i * k + s] * weights[i * k + s];
        }
        const double inv = norm_topk_prob ? 1.0 / sums[i] : 1.0;
        for (std::int64_t s = 0; s < k; ++s) {
          total[static_cast<std::size_t>(idx[i * k + s])] += (gwp[i * k + s] - dot) * inv;
        }
      }
      // Softmax backward, dz_j = p_j (t_j - sum_l p_l t_l), written with sum_l p_l = 1 as
      // p_j (t_j sum_{l != j} p_l - sum_{l != j} p_l t_l): for a dominant expert (p_j near 1) the
      // form 1 - p_j would cancel in fp32; the sums over the other experts do not.
      double q = 0.0;
      double pt = 0.0;
      for (std::int64_t j = 0; j < ne; ++j) {
        const double p = probs[i * ne + j];
        q += p;
        pt += p * total[static_cast<std::size_t>(j)];
      }
      for (std::int64_t j = 0; j < ne; ++j) {
        const double p = probs[i * ne + j];
        const double t = total[static_cast<std::size_t>(j)];
        out[i * ne + j] = static_cast<float>(p * (t * (q - p) - (pt - p * t)));
      }
    }
  });
  return grad;
}

}  // namespace grpo::kernels::cpu
