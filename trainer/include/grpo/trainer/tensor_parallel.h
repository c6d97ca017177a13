// Tensor parallelism as Megatron-LM splits a decoder (Shoeybi et al. 2019, section 3; Megatron-Core
// megatron/core/tensor_parallel/layers.py ColumnParallelLinear, RowParallelLinear and
// VocabParallelEmbedding, mappings.py copy_to/reduce_from_tensor_model_parallel_region): q/k/v and
// gate/up are split by output rows (heads, FFN columns), o and down by input columns, the
// embedding and the LM head by vocabulary rows. docs/parallelism.md has the rules and volumes.
//
// The two collectives of every split block, differentiable: copy_to_tp before a column-parallel
// layer (identity forward, all-reduce of the gradient backward) and reduce_from_tp after a
// row-parallel one (all-reduce forward, identity backward). Every call is a collective of the TP
// group, forward and backward; a failed collective throws CollectiveError (expert_parallel.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "grpo/core/model_spec.h"
#include "grpo/kernels/ops.h"
#include "grpo/trainer/communicator.h"
#include "grpo/trainer/torch_compat.h"

namespace grpo::trainer {

// This rank's place in its TP group. The default (size 1, no group) holds every parameter whole.
struct TensorShard {
  int rank = 0;
  int size = 1;
  Communicator* group = nullptr;  // the TP group; null when size == 1
  // Megatron's sequence parallelism: between the split blocks (norms, residuals, the MoE layer)
  // each rank holds its own rows of the sequence (SequenceSplit); the column-parallel inputs are
  // all-gathered and the row-parallel outputs reduce-scattered instead of copy_to/reduce_from.
  bool sequence_parallel = false;
  bool active() const { return group != nullptr && size > 1; }
  bool sp() const { return active() && sequence_parallel; }
};

// Identity forward; the gradient is summed over the group (Megatron's f).
at::Tensor copy_to_tp(const at::Tensor& x, const TensorShard& tp);
// Summed over the group forward; the gradient passes unchanged (Megatron's g).
at::Tensor reduce_from_tp(const at::Tensor& x, const TensorShard& tp);
// Every rank's `x` concatenated along the last dimension, in group order. Not differentiable
// (the rollout's logits for sampling).
at::Tensor gather_last_dim(const at::Tensor& x, const TensorShard& tp);

// Log-probs (and entropy) of `tokens` [N] under softmax(hidden [N, H] @ lm_head^T / temperature)
// where this rank holds vocabulary rows [vocab_begin, vocab_begin + lm_head.size(0)) of the LM
// head: the row maxima, exp-sums, target logits and p-weighted logits are reduced over the group,
// so a rank holds N x V / TP logits, never N x V. Differentiable in hidden and lm_head; the
// entropy too when entropy_grad.
kernels::TokenLogProbs vocab_parallel_logprobs(const at::Tensor& hidden, const at::Tensor& lm_head,
                                               const at::Tensor& tokens, double temperature,
                                               bool with_entropy, bool entropy_grad,
                                               std::int64_t vocab_begin, const TensorShard& tp);

// Sequence parallelism's row split of a [B, T, ...] activation: the B * T rows, flattened in
// (batch, position) order and padded with zero rows to TP * local, are split evenly: rank r
// holds rows [r * local, (r + 1) * local). Padding rows run through the norms and the MoE layer
// (masked out of its statistics: sp_valid) and are dropped by sp_gather.
struct SequenceSplit {
  std::int64_t batch = 0;
  std::int64_t length = 0;
  std::int64_t local = 0;  // rows per rank: ceil(B * T / TP)
  std::int64_t rows() const { return batch * length; }
};
SequenceSplit sequence_split(std::int64_t batch, std::int64_t length, const TensorShard& tp);

// [B, T] bool -> [local] bool on `device`: which of this rank's rows are real tokens marked in
// `valid` (undefined: every real token); the padding rows are false. No communication.
at::Tensor sp_valid(const at::Tensor& valid, const SequenceSplit& split, const TensorShard& tp,
                    const at::Device& device);
// [local, H] -> [B, T, H]: every rank's rows (Megatron's gather_from_sequence_parallel_region).
// The gradient of a column-parallel input is a partial sum: it is reduce-scattered back.
at::Tensor sp_gather(const at::Tensor& x, const SequenceSplit& split, const TensorShard& tp);
// The same gather for a consumer whose gradient is already whole on every rank (the LM head and
// the vocabulary-parallel loss, which all-reduce the gradient of their input themselves): the
// gradient is this rank's rows of it.
at::Tensor sp_gather_whole_grad(const at::Tensor& x, const SequenceSplit& split,
                                const TensorShard& tp);
// [B, T, H] partial sums (a row-parallel output) -> [local, H]: this rank's rows of the group-wide
// sum (Megatron's reduce_scatter_to_sequence_parallel_region); the gradient is all-gathered.
at::Tensor sp_reduce_scatter(const at::Tensor& y, const SequenceSplit& split,
                             const TensorShard& tp);

}  // namespace grpo::trainer
