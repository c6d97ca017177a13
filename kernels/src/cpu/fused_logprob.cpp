#include "cpu/fused_logprob.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

#include "cpu/row_math.h"

namespace grpo::kernels::cpu {
namespace {

std::int64_t cap_rows(std::int64_t rows, std::int64_t n, const FusedOptions& options) {
  if (rows >= 16) rows = rows / 16 * 16;
  if (options.max_token_chunk > 0) rows = std::min(rows, options.max_token_chunk);
  return std::max<std::int64_t>(1, std::min(rows, n));
}

void check_inputs(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& tokens) {
  TORCH_CHECK(hidden.dim() == 2 && weight.dim() == 2 && hidden.size(1) == weight.size(1),
              "fused log-prob: hidden [N, H] and weight [V, H] expected, got ", hidden.sizes(),
              " and ", weight.sizes());
  TORCH_CHECK(hidden.scalar_type() == at::kFloat && weight.scalar_type() == at::kFloat &&
                  hidden.is_contiguous() && weight.is_contiguous(),
              "fused log-prob (CPU): contiguous fp32 inputs expected");
  TORCH_CHECK(tokens.scalar_type() == at::kLong && tokens.dim() == 1 &&
                  tokens.size(0) == hidden.size(0) && tokens.is_contiguous(),
              "fused log-prob: tokens [N] int64 expected, got ", tokens.sizes());
  if (tokens.numel() > 0) {
    const std::int64_t lo = tokens.min().item<std::int64_t>();
    const std::int64_t hi = tokens.max().item<std::int64_t>();
    TORCH_CHECK(lo >= 0 && hi < weight.size(0), "fused log-prob: token ids must be in [0, ",
                weight.size(0), "), got [", lo, ", ", hi, "]");
  }
}

// Online log-sum-exp over one contiguous row of n logits, in vocabulary blocks of `block`.
OnlineSoftmax row_softmax(const float* row, std::int64_t n, std::int64_t block, float scale) {
  OnlineSoftmax st;
  for (std::int64_t v0 = 0; v0 < n; v0 += block) {
    st.merge(block_stats(row + v0, std::min(block, n - v0), scale));
  }
  return st;
}

at::Tensor as_fp32(const at::Tensor& t) {
  return t.to(at::kFloat).contiguous();
}

const float* data_or_null(const at::Tensor& t) {
  return t.defined() ? t.data_ptr<float>() : nullptr;
}

// A row's results from its softmax statistics and its token's scaled logit.
struct RowResult {
  float lse;
  float entropy;
  float logprob;
};
RowResult finish_row(const OnlineSoftmax& st, float target_logit) {
  const double l = st.lse();
  return {static_cast<float>(l), static_cast<float>(st.entropy()),
          static_cast<float>(static_cast<double>(target_logit) - l)};
}

// Turns one row of n logits in place into d(a * log p_t + b * entropy)/d(logits); t is the
// token's column in this row (outside [0, n) when the token is in another block).
void grad_row_in_place(float* row, std::int64_t n, float scale, float lse, float a, float b,
                       float entropy, std::int64_t t) {
  softmax_grad(row, row, n, scale, lse, a, b, entropy);
  if (t >= 0 && t < n) row[t] += a;
}

// Adds one token's loss terms to the sums.
void add_token(PolicySums& sums, const math::TokenLoss& t, float entropy) {
  sums.pg += t.pg;
  sums.kl += t.kl;
  sums.entropy += entropy;
  sums.clipped += t.clipped ? 1.0 : 0.0;
}

}  // namespace

std::int64_t grad_chunk_rows(std::int64_t v, std::int64_t n, const FusedOptions& options) {
  return cap_rows(options.grad_chunk_bytes / (4 * std::max<std::int64_t>(v, 1)), n, options);
}

std::int64_t block_chunk_rows(std::int64_t block, std::int64_t n, const FusedOptions& options) {
  return cap_rows(options.block_bytes / (4 * std::max<std::int64_t>(block, 1)), n, options);
}

LogprobStats logprob_forward(const at::Tensor& hidden_in, const at::Tensor& weight_in,
                             const at::Tensor& tokens, double temperature,
                             const FusedOptions& options) {
  const at::Tensor hidden = as_fp32(hidden_in);
  const at::Tensor weight = as_fp32(weight_in);
  check_inputs(hidden, weight, tokens);
  const std::int64_t n = hidden.size(0);
  const std::int64_t v = weight.size(0);
  const float scale = static_cast<float>(1.0 / temperature);
  LogprobStats out;
  out.logprobs = at::empty({n}, hidden.options());
  out.entropy = at::empty({n}, hidden.options());
  out.lse = at::empty({n}, hidden.options());
  if (n == 0) return out;

  const std::int64_t vb = std::min(v, std::max<std::int64_t>(options.vocab_block, 1));
  const std::int64_t rows = block_chunk_rows(vb, n, options);
  at::Tensor buf = at::empty({rows * vb}, hidden.options());
  std::vector<OnlineSoftmax> stats(static_cast<std::size_t>(rows));
  std::vector<float> target(static_cast<std::size_t>(rows));
  const std::int64_t* tok = tokens.data_ptr<std::int64_t>();
  float* lp = out.logprobs.data_ptr<float>();
  float* ent = out.entropy.data_ptr<float>();
  float* lse = out.lse.data_ptr<float>();

  for (std::int64_t c0 = 0; c0 < n; c0 += rows) {
    const std::int64_t r = std::min(rows, n - c0);
    const at::Tensor h = hidden.narrow(0, c0, r);
    std::fill(stats.begin(), stats.end(), OnlineSoftmax{});
    for (std::int64_t v0 = 0; v0 < v; v0 += vb) {
      const std::int64_t nb = std::min(vb, v - v0);
      at::Tensor z = buf.narrow(0, 0, r * nb).view({r, nb});
      at::mm_out(z, h, weight.narrow(0, v0, nb).t());
      const float* zp = z.data_ptr<float>();
      at::parallel_for(0, r, 1, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) {
          const auto ui = static_cast<std::size_t>(i);
          stats[ui].merge(block_stats(zp + i * nb, nb, scale));
          const std::int64_t t = tok[c0 + i] - v0;
          if (t >= 0 && t < nb) target[ui] = zp[i * nb + t] * scale;
        }
      });
    }
    for (std::int64_t i = 0; i < r; ++i) {
      const RowResult row =
          finish_row(stats[static_cast<std::size_t>(i)], target[static_cast<std::size_t>(i)]);
      lse[c0 + i] = row.lse;
      ent[c0 + i] = row.entropy;
      lp[c0 + i] = row.logprob;
    }
  }
  return out;
}

Grads logprob_backward(const at::Tensor& hidden_in, const at::Tensor& weight_in,
                       const at::Tensor& tokens, double temperature, const LogprobStats& saved,
                       const at::Tensor& grad_logprobs, const at::Tensor& grad_entropy,
                       bool need_hidden, bool need_weight, const FusedOptions& options) {
  const at::Tensor hidden = as_fp32(hidden_in);
  const at::Tensor weight = as_fp32(weight_in);
  check_inputs(hidden, weight, tokens);
  const std::int64_t n = hidden.size(0);
  const std::int64_t v = weight.size(0);
  const float scale = static_cast<float>(1.0 / temperature);
  Grads g;
  if (need_hidden) g.hidden = at::zeros_like(hidden);
  if (need_weight) g.weight = at::zeros_like(weight);
  if (n == 0 || (!need_hidden && !need_weight)) return g;

  const at::Tensor glp =
      grad_logprobs.defined() ? grad_logprobs.to(at::kFloat).contiguous() : at::Tensor();
  const at::Tensor gent =
      grad_entropy.defined() ? grad_entropy.to(at::kFloat).contiguous() : at::Tensor();
  const float* ga = data_or_null(glp);
  const float* gb = data_or_null(gent);
  const float* lse = saved.lse.data_ptr<float>();
  const float* ent = saved.entropy.data_ptr<float>();
  const std::int64_t* tok = tokens.data_ptr<std::int64_t>();

  const std::int64_t vb = std::min(v, std::max<std::int64_t>(options.vocab_block, 1));
  const std::int64_t rows = block_chunk_rows(vb, n, options);
  at::Tensor buf = at::empty({rows * vb}, hidden.options());
  for (std::int64_t c0 = 0; c0 < n; c0 += rows) {
    const std::int64_t r = std::min(rows, n - c0);
    const at::Tensor h = hidden.narrow(0, c0, r);
    for (std::int64_t v0 = 0; v0 < v; v0 += vb) {
      const std::int64_t nb = std::min(vb, v - v0);
      const at::Tensor w = weight.narrow(0, v0, nb);
      at::Tensor z = buf.narrow(0, 0, r * nb).view({r, nb});
      at::mm_out(z, h, w.t());
      float* zp = z.data_ptr<float>();
      at::parallel_for(0, r, 1, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) {
          const std::int64_t k = c0 + i;
          const float a = ga != nullptr ? ga[k] * scale : 0.0f;
          const float bb = gb != nullptr ? gb[k] * scale : 0.0f;
          grad_row_in_place(zp + i * nb, nb, scale, lse[k], a, bb, ent[k], tok[k] - v0);
        }
      });
      if (need_hidden) g.hidden.narrow(0, c0, r).addmm_(z, w);
      if (need_weight) g.weight.narrow(0, v0, nb).addmm_(z.t(), h);
    }
  }
  return g;
}

PolicySums policy_sums(const LogprobStats& stats, const PolicyTokens& in,
                       const math::PolicyScalars& scalars) {
  PolicySums sums;
  const std::int64_t n = stats.logprobs.size(0);
  const float* lp = stats.logprobs.data_ptr<float>();
  const float* ent = stats.entropy.data_ptr<float>();
  const float* old = in.old_logprobs.data_ptr<float>();
  const float* ref = data_or_null(in.ref_logprobs);
  const float* adv = in.advantages.data_ptr<float>();
  for (std::int64_t i = 0; i < n; ++i) {
    add_token(
        sums,
        math::token_policy_loss(lp[i], old[i], ref != nullptr ? ref[i] : 0.0, adv[i], scalars),
        ent[i]);
  }
  return sums;
}

EagerPolicy policy_loss_eager(const at::Tensor& hidden_in, const at::Tensor& weight_in,
                              const at::Tensor& tokens, const PolicyTokens& in,
                              const math::PolicyScalars& scalars, double temperature,
                              bool need_hidden, bool need_weight, const FusedOptions& options) {
  // Reduced-precision inputs are computed on fp32 copies (docs/kernels.md).
  const at::Tensor hidden = as_fp32(hidden_in);
  const at::Tensor weight = as_fp32(weight_in);
  check_inputs(hidden, weight, tokens);
  const std::int64_t n = hidden.size(0);
  const std::int64_t v = weight.size(0);
  const float scale = static_cast<float>(1.0 / temperature);
  const std::int64_t vb = std::max<std::int64_t>(options.vocab_block, 1);
  EagerPolicy out;
  // Every row of grad_hidden and, from the first chunk on, all of grad_weight are written by a
  // product with beta = 0, so neither needs zeroing.
  if (need_hidden) out.grads.hidden = at::empty_like(hidden);
  if (need_weight) out.grads.weight = at::empty_like(weight);
  if (n == 0) return out;

  const std::int64_t rows = grad_chunk_rows(v, n, options);
  at::Tensor buf = at::empty({rows * v}, hidden.options());
  std::vector<float> lse(static_cast<std::size_t>(rows));
  std::vector<float> ent(static_cast<std::size_t>(rows));
  std::vector<float> lp(static_cast<std::size_t>(rows));
  std::vector<float> coef_a(static_cast<std::size_t>(rows));
  std::vector<float> coef_b(static_cast<std::size_t>(rows));
  const std::int64_t* tok = tokens.data_ptr<std::int64_t>();
  const float* old = in.old_logprobs.data_ptr<float>();
  const float* ref = data_or_null(in.ref_logprobs);
  const float* adv = in.advantages.data_ptr<float>();

  for (std::int64_t c0 = 0; c0 < n; c0 += rows) {
    const std::int64_t r = std::min(rows, n - c0);
    const at::Tensor h = hidden.narrow(0, c0, r);
    at::Tensor z = buf.narrow(0, 0, r * v).view({r, v});
    at::mm_out(z, h, weight.t());
    float* zp = z.data_ptr<float>();

    // 1. Online log-sum-exp and entropy of each row, its token's log-prob.
    at::parallel_for(0, r, 1, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) {
        const auto ui = static_cast<std::size_t>(i);
        const RowResult row =
            finish_row(row_softmax(zp + i * v, v, vb, scale), zp[i * v + tok[c0 + i]] * scale);
        lse[ui] = row.lse;
        ent[ui] = row.entropy;
        lp[ui] = row.logprob;
      }
    });

    // 2. The loss terms of each token and d(loss)/d(logprob), d(loss)/d(entropy).
    for (std::int64_t i = 0; i < r; ++i) {
      const auto ui = static_cast<std::size_t>(i);
      const std::int64_t k = c0 + i;
      const math::TokenLoss t =
          math::token_policy_loss(lp[ui], old[k], ref != nullptr ? ref[k] : 0.0, adv[k], scalars);
      add_token(out.sums, t, ent[ui]);
      coef_a[ui] = static_cast<float>(t.dlogprob * scale);
      coef_b[ui] = static_cast<float>(t.dentropy * scale);
    }
    if (!need_hidden && !need_weight) continue;

    // 3. The logits become d(loss)/d(logits) in place.
    at::parallel_for(0, r, 1, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) {
        const auto ui = static_cast<std::size_t>(i);
        grad_row_in_place(zp + i * v, v, scale, lse[ui], coef_a[ui], coef_b[ui], ent[ui],
                          tok[c0 + i]);
      }
    });

    // 4. Back through the LM head.
    if (need_hidden) {
      at::Tensor gh = out.grads.hidden.narrow(0, c0, r);
      at::mm_out(gh, z, weight);
    }
    if (need_weight) {
      if (c0 == 0) {
        at::mm_out(out.grads.weight, z.t(), h);
      } else {
        out.grads.weight.addmm_(z.t(), h);
      }
    }
  }
  return out;
}

}  // namespace grpo::kernels::cpu
