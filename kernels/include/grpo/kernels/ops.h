// The trainer's hot ops behind one interface, so the fused implementation and the plain LibTorch
// reference (the `kernels` setting, backend.h) are interchangeable without touching the model or
// the loss code. Every op is a pure function of its tensor arguments; implementations hold no
// state.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "grpo/kernels/backend.h"
#include "grpo/kernels/policy_math.h"  // KlType

namespace grpo::kernels {

struct RouterOutput {
  at::Tensor weights;  // [N, k] float, differentiable: the routing weights of the top-k
  at::Tensor indices;  // [N, k] int64: the chosen experts, best first
  at::Tensor probs;    // [N, E] float, differentiable: softmax over all experts
  // [E] int64: how many (token, slot) pairs of the valid tokens chose each expert (all tokens when
  // no mask is given). This is what the load statistics and the aux loss count.
  at::Tensor tokens_per_expert;
  // The permutation that groups all N * k (token, slot) pairs by expert, valid or not (the expert
  // computation runs on every token): the pairs of expert e are positions
  // [expert_offsets[e], expert_offsets[e + 1]) of sorted_tokens / sorted_pairs, in token order.
  at::Tensor expert_offsets;  // [E + 1] int64, expert_offsets[0] = 0, expert_offsets[E] = N * k
  at::Tensor sorted_tokens;   // [N * k] int64: the token of each pair
  at::Tensor sorted_pairs;    // [N * k] int64: token * k + slot, an index into weights.view(-1)
};

struct TokenLogProbs {
  at::Tensor logprobs;  // [N] float: log p(token) under softmax(logits / temperature)
  at::Tensor entropy;   // [N] float, undefined unless asked for
};

// One micro batch of response tokens, flattened to the valid (unpadded) tokens.
struct PolicyLossInputs {
  at::Tensor tokens;        // [N] int64: the sampled tokens
  at::Tensor old_logprobs;  // [N]: log-probs under the policy that sampled them (no grad)
  at::Tensor ref_logprobs;  // [N]: log-probs under the frozen reference (undefined if no KL)
  at::Tensor advantages;    // [N]: the group-normalized advantage of each token's sequence
};

struct PolicyLossParams {
  double clip_ratio_low = 0.2;
  double clip_ratio_high = 0.2;
  double clip_ratio_c = 3.0;  // dual-clip lower bound for negative advantages (verl), > 1
  bool use_kl_loss = true;
  KlType kl_type = KlType::kLowVarKl;
  double kl_loss_coef = 0.001;
  double entropy_coeff = 0.0;
  double temperature = 1.0;
};

struct PolicyLossOutputs {
  at::Tensor loss;       // scalar, differentiable: pg_loss + kl_coef * kl - entropy_coeff * entropy
  at::Tensor pg_loss;    // scalar, detached: token-mean clipped surrogate
  at::Tensor kl;         // scalar, detached: token-mean KL estimate (0 when use_kl_loss is off)
  at::Tensor entropy;    // scalar, detached: token-mean entropy
  at::Tensor clip_frac;  // scalar, detached: fraction of tokens where the clipped branch won
};

class Ops {
 public:
  virtual ~Ops() = default;
  virtual Backend backend() const = 0;

  // x * rsqrt(mean(x^2, -1) + eps) * weight, computed in fp32 and returned in x's dtype.
  virtual at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) const = 0;

  // Softmax over router_logits [N, E] (fp32), top-k, renormalized to sum 1 when norm_topk_prob,
  // with the per-expert counts over the tokens marked in valid ([N] bool; undefined: all) and the
  // permutation grouping all tokens by expert. Ties between equal scores may pick either expert.
  virtual RouterOutput route(const at::Tensor& router_logits, std::int64_t top_k,
                             bool norm_topk_prob, const at::Tensor& valid) const = 0;
  RouterOutput route(const at::Tensor& router_logits, std::int64_t top_k,
                     bool norm_topk_prob) const {
    return route(router_logits, top_k, norm_topk_prob, at::Tensor());
  }

  // log softmax(hidden [N, H] @ lm_head [V, H]^T / temperature) at tokens [N]; entropy [N] too
  // when with_entropy. Differentiable in hidden and lm_head.
  virtual TokenLogProbs token_logprobs(const at::Tensor& hidden, const at::Tensor& lm_head,
                                       const at::Tensor& tokens, double temperature,
                                       bool with_entropy) const = 0;

  // GRPO's token-mean PPO clipped objective with the KL and entropy terms, from hidden states:
  // a fused implementation never materializes the [N, V] logits.
  virtual PolicyLossOutputs policy_loss(const at::Tensor& hidden, const at::Tensor& lm_head,
                                        const PolicyLossInputs& in,
                                        const PolicyLossParams& params) const = 0;
};

// The permutation fields of `out` (expert_offsets, sorted_tokens, sorted_pairs) for the chosen
// experts `indices` [N, k] of `experts`: what route() returns with them. For callers that route
// rows gathered from other ranks (expert tensor parallelism).
void group_by_expert(const at::Tensor& indices, std::int64_t experts, RouterOutput* out);

// The KL estimate per token from log-probs under the policy and the reference, as verl's
// kl_penalty computes it (low_var_kl clamped to [-10, 10]).
at::Tensor kl_penalty(const at::Tensor& logprob, const at::Tensor& ref_logprob, KlType type);

// GRPO's loss from per-token log-probs [N] (differentiable) and their token-mean entropy (a
// scalar, differentiable when params.entropy_coeff != 0): what policy_loss computes once it has
// them. For callers that compute the log-probs themselves (vocabulary split over TP ranks).
PolicyLossOutputs policy_loss_from_logprobs(const at::Tensor& logprob, const at::Tensor& entropy,
                                            const PolicyLossInputs& in,
                                            const PolicyLossParams& params);

// The implementation for a backend; lives for the whole program. Never null.
const Ops& ops_for(Backend backend);

}  // namespace grpo::kernels
