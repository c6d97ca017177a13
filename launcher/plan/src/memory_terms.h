// The building blocks of the memory estimate shared by the Megatron and FSDP estimates: bytes
// per parameter, activation bytes per token, tokens per micro batch (floor and worst case) and
// the logits buffers of each log-prob path. Internal to grpo_core; the formulas and their sources
// are in docs/memory-model.md.
#pragma once

#include "grpo/core/model_spec.h"
#include "grpo/core/workload.h"
#include "grpo/plan/layout.h"
#include "grpo/plan/memory.h"

namespace grpo::core::memory_terms {

double weight_bytes(Dtype d);
// Adam with mixed precision: fp32 master weights + two fp32 moments (12 B); fp32: moments (8 B).
double optimizer_bytes(Dtype d);
// fp32 main gradients (Megatron accumulates and reduces gradients in fp32; FSDP's fp32 shards).
constexpr double kGradBytes = 4.0;

// Activation bytes stored per token for one layer (bf16 values, flash attention, no dropout).
struct LayerActivation {
  double dense = 0;  // a dense layer
  double moe = 0;    // an MoE layer
  double input = 0;  // the layer input alone (what full recompute keeps)
  double of_layer(const ModelSpec& m, std::int64_t layer) const {
    return m.is_moe() && layer >= m.first_k_dense_layers ? moe : dense;
  }
};
LayerActivation layer_activation_per_token(const ModelSpec& m, const Layout& l);

// Tokens one device holds in one training micro batch. `split` divides every sequence (CP for
// Megatron, Ulysses for FSDP).
//   worst: use_dynamic_bsz caps a micro batch at max_token_len_per_gpu tokens; otherwise
//          micro_batch sequences of max_prompt + max_response tokens each.
//   floor: with remove_padding the tensors hold only real tokens, and a micro batch can be one
//          short sequence (1 token); without it every sequence is padded to the maximum.
struct TokenRange {
  double floor = 0;
  double worst = 0;
  // verl's prefix grouper: the response tokens whose fp32 log-probs the concatenated rows
  // yield (0 when the grouper is not in use; docs/memory-model.md "verl's prefix grouper").
  double grouped_responses = 0;
};
TokenRange micro_batch_tokens(const WorkloadSpec& w, const Layout& l, int split);

// Whether verl's FSDP actor takes the prefix grouper's path (dp_actor.py _forward_micro_batch:
// use_prefix_grouper and none of remove_padding, Ulysses, fused kernels, dynamic batches).
bool prefix_grouper_applies(const WorkloadSpec& w, int ulysses);
// The tokens of one grouped micro batch: worst is the concatenated rows, padded, of the worst
// micro batch; grouped_responses is its response tokens (micro batch x max response length).
TokenRange prefix_grouper_tokens(const WorkloadSpec& w, const Layout& l);

// The logits of one grouped micro batch: the model's bf16 logits over `concat` tokens, the bf16
// response rows split from them, and 3.5 fp32 tensors over those `responses` (the unfused path).
double prefix_grouper_logits_bytes(double concat, double responses, double vocab);

// The log-prob path the settings select (fused kernels win, then Megatron's vocab-parallel path,
// then chunked entropy).
LogprobPath logprob_path(const WorkloadSpec& w, bool megatron);
// Bytes of logits-sized buffers alive at the peak of the log-prob + loss forward/backward for
// `tokens` tokens over `vocab` vocabulary columns held by this device.
double logits_bytes(LogprobPath path, double tokens, double vocab);

// Activations of `layers` consecutive layers for `tokens` tokens with `in_flight` micro batches
// alive (pipeline 1F1B), after the layout's recompute settings. `first_layer` is the global index
// of the first one (dense vs MoE).
double stage_activations(const ModelSpec& m, const Layout& l, const LayerActivation& act,
                         std::int64_t first_layer, int layers, double tokens, double in_flight);

// grpo-trainer's activations (docs/memory-model.md "The embedded trainer's activations"): in
// the parameters' dtype (fp32 or bf16; the softmax and the router in fp32), attention scores
// materialized, each op keeping what LibTorch's autograd keeps. Bytes of
// `layers` consecutive layers starting at `first_layer` for `tokens` tokens of sequences of `seq`
// tokens, with `in_flight` micro batches alive (1F1B), plus the last MoE layer's forward
// temporaries, one layer's attention-backward temporaries and the largest parameter's gradient
// (made whole before it is added to .grad).
double embedded_stage_activations(const ModelSpec& m, const Layout& l, Dtype dtype, double seq,
                                  std::int64_t first_layer, int layers, double tokens,
                                  double in_flight);
// The last stage's for `tokens` tokens of which `response_tokens` are responses: the final
// norm's input and the hidden states the LM head sees (every token) and the log-prob buffers
// (the responses': the fused kernel without TP, the vocabulary-parallel logits with it).
double embedded_logits_bytes(const ModelSpec& m, const Layout& l, Dtype dtype, double tokens,
                             double response_tokens);

// grpo-trainer's own generation (docs/memory-model.md "The embedded trainer's rollout"): `seqs`
// sequences at once (rows per rank, at most max_num_seqs) of prompts of `prompt` tokens and up to
// `response` new ones, with the model split `tp` ways (1: the whole copy).
struct EmbeddedRollout {
  double kv_cache = 0;   // keys and values of every layer, in the parameters' dtype
  double workspace = 0;  // the prefill's largest layer step and the sampling buffers
};
EmbeddedRollout embedded_rollout(const ModelSpec& m, Dtype dtype, double seqs, double prompt,
                                 double response, double tp);

}  // namespace grpo::core::memory_terms
