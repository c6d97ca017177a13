// The plain LibTorch reference of every op in ops.h: easy to read, the baseline fused kernels are
// tested against. It materializes the [N, V] logits.
#include <torch/torch.h>

#include "grpo/kernels/ops.h"
#include "ops_registry.h"

namespace grpo::kernels {
namespace {

// fp16/bf16 are computed in fp32; fp32 and fp64 stay as they are.
at::Tensor at_least_fp32(const at::Tensor& t) {
  const bool reduced = t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16;
  return reduced ? t.to(at::kFloat) : t;
}

at::Tensor entropy_from_logits(const at::Tensor& logits) {
  // verl's entropy_from_logits: logsumexp(l) - sum(softmax(l) * l).
  at::Tensor probs = at::softmax(logits, -1);
  return at::logsumexp(logits, -1) - (probs * logits).sum(-1);
}

class ReferenceOps final : public Ops {
 public:
  Backend backend() const override { return Backend::kReference; }

  at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) const override {
    at::Tensor xf = at_least_fp32(x);
    at::Tensor variance = xf.pow(2).mean(-1, /*keepdim=*/true);
    at::Tensor normed = xf * at::rsqrt(variance + eps);
    return weight * normed.to(x.scalar_type());
  }

  using Ops::route;
  RouterOutput route(const at::Tensor& router_logits, std::int64_t top_k, bool norm_topk_prob,
                     const at::Tensor& valid) const override {
    const std::int64_t experts = router_logits.size(-1);
    RouterOutput out;
    out.probs = at::softmax(at_least_fp32(router_logits), -1);
    auto [weights, indices] = out.probs.topk(top_k, -1);
    if (norm_topk_prob) weights = weights / weights.sum(-1, /*keepdim=*/true);
    out.weights = weights;
    out.indices = indices;
    at::Tensor counted =
        valid.defined() ? indices.index_select(0, at::nonzero(valid).squeeze(1)) : indices;
    out.tokens_per_expert = at::bincount(counted.reshape({-1}), {}, experts);
    group_by_expert(indices, experts, &out);
    return out;
  }

  TokenLogProbs token_logprobs(const at::Tensor& hidden, const at::Tensor& lm_head,
                               const at::Tensor& tokens, double temperature,
                               bool with_entropy) const override {
    at::Tensor logits = at_least_fp32(at::matmul(hidden, lm_head.t()));
    if (temperature != 1.0) logits = logits / temperature;
    TokenLogProbs out;
    out.logprobs = at::log_softmax(logits, -1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1);
    if (with_entropy) out.entropy = entropy_from_logits(logits);
    return out;
  }

  PolicyLossOutputs policy_loss(const at::Tensor& hidden, const at::Tensor& lm_head,
                                const PolicyLossInputs& in,
                                const PolicyLossParams& p) const override {
    const bool entropy_grad = p.entropy_coeff != 0.0;
    at::Tensor logits = at_least_fp32(at::matmul(hidden, lm_head.t()));
    if (p.temperature != 1.0) logits = logits / p.temperature;
    at::Tensor logprob =
        at::log_softmax(logits, -1).gather(-1, in.tokens.unsqueeze(-1)).squeeze(-1);

    at::Tensor entropy;
    if (entropy_grad) {
      entropy = entropy_from_logits(logits).mean();
    } else {
      torch::NoGradGuard no_grad;
      entropy = entropy_from_logits(logits.detach()).mean();
    }

    return policy_loss_from_logprobs(logprob, entropy, in, p);
  }
};

}  // namespace

void group_by_expert(const at::Tensor& indices, std::int64_t experts, RouterOutput* out) {
  // A stable sort keeps token order within each expert.
  at::Tensor flat = indices.reshape({-1});
  at::Tensor order = std::get<1>(at::sort(flat, c10::optional<bool>(true), /*dim=*/0));
  out->sorted_pairs = order;
  out->sorted_tokens = at::div(order, indices.size(-1), "floor");
  out->expert_offsets =
      at::cat({at::zeros({1}, flat.options()), at::bincount(flat, {}, experts).cumsum(0)});
}

at::Tensor kl_penalty(const at::Tensor& logprob, const at::Tensor& ref_logprob, KlType type) {
  switch (type) {
    case KlType::kKl:
      return logprob - ref_logprob;
    case KlType::kAbs:
      return (logprob - ref_logprob).abs();
    case KlType::kMse:
      return 0.5 * (logprob - ref_logprob).square();
    case KlType::kLowVarKl: {
      // k3 estimator, clamped as verl does.
      at::Tensor kl = at::clamp(ref_logprob - logprob, -20.0, 20.0);
      at::Tensor kld = at::exp(kl) - kl - 1.0;
      return at::clamp(kld, -10.0, 10.0);
    }
  }
  return logprob - ref_logprob;
}

PolicyLossOutputs policy_loss_from_logprobs(const at::Tensor& logprob, const at::Tensor& entropy,
                                            const PolicyLossInputs& in, const PolicyLossParams& p) {
  const bool entropy_grad = p.entropy_coeff != 0.0;
  // verl's compute_policy_loss (vanilla): ratio clamped in log space, clipped surrogate.
  at::Tensor ratio = at::exp(at::clamp(logprob - in.old_logprobs, -20.0, 20.0));
  const at::Tensor& adv = in.advantages;
  at::Tensor pg1 = -adv * ratio;
  at::Tensor pg2 = -adv * at::clamp(ratio, 1.0 - p.clip_ratio_low, 1.0 + p.clip_ratio_high);
  at::Tensor clipped = at::maximum(pg1, pg2);
  // Dual clip: for negative advantages the loss is bounded by -adv * clip_ratio_c.
  at::Tensor pg3 = -adv * p.clip_ratio_c;
  at::Tensor pg = at::where(adv < 0, at::minimum(pg3, clipped), clipped);
  at::Tensor pg_loss = pg.mean();

  PolicyLossOutputs out;
  at::Tensor loss = pg_loss;
  if (p.use_kl_loss) {
    at::Tensor kl = kl_penalty(logprob, in.ref_logprobs, p.kl_type).mean();
    loss = loss + p.kl_loss_coef * kl;
    out.kl = kl.detach();
  } else {
    out.kl = at::zeros({}, logprob.options());
  }
  if (entropy_grad) loss = loss - p.entropy_coeff * entropy;

  out.loss = loss;
  out.pg_loss = pg_loss.detach();
  out.entropy = entropy.detach();
  out.clip_frac = at::gt(pg2, pg1).to(logprob.scalar_type()).mean().detach();
  return out;
}

const Ops& reference_ops_default() {
  static const ReferenceOps reference;
  return reference;
}

const Ops& ops_for(Backend backend) {
  switch (backend) {
    case Backend::kReference:
      return reference_ops_default();
    case Backend::kFused:
      return fused_ops_default();
  }
  return reference_ops_default();
}

}  // namespace grpo::kernels
