// A Qwen2/Qwen3-style decoder built from a core::ModelSpec: RMSNorm, rotary position embeddings,
// grouped-query attention (optional q/k/v bias and q/k RMSNorm) with a KV cache for generation,
// SwiGLU feed-forward, and MoE layers (softmax top-k router, SwiGLU experts, an optional shared
// expert with a sigmoid gate, the auxiliary load-balancing loss).
//
// Parameter names follow Hugging Face's Qwen2/Qwen2-MoE/Qwen3 checkpoints
// ("model.layers.0.self_attn.q_proj.weight", "lm_head.weight"), and the model creates exactly the
// parameters core::count_params counts (tests check it). Constructed on the meta device it
// allocates nothing, which is how the big specs are counted.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grpo/core/model_spec.h"
#include "grpo/kernels/ops.h"
#include "grpo/trainer/communicator.h"
#include "grpo/trainer/sharding_plan.h"
#include "grpo/trainer/tensor_parallel.h"
#include "grpo/trainer/torch_compat.h"

namespace grpo::trainer {

// Keys and values of every layer for incremental decoding. Owned by the caller of generate().
struct KvCache {
  std::vector<at::Tensor> keys;    // per layer [B, kv_heads, capacity, head_dim]
  std::vector<at::Tensor> values;  // per layer [B, kv_heads, capacity, head_dim]
  std::int64_t length = 0;         // slots filled so far
  std::int64_t capacity = 0;
};

struct ModelOutput {
  at::Tensor hidden;    // [B, T, hidden]: after the final norm, before the LM head
  at::Tensor aux_loss;  // scalar: sum over MoE layers of the load-balancing loss (0 when dense)
};

// Per MoE layer: how many (token, slot) pairs chose each expert since the last reset.
struct ExpertLoad {
  std::int64_t layer = 0;
  std::vector<std::int64_t> tokens_per_expert;
};

// Expert parallelism: this rank holds experts [begin, end) of every MoE layer (registered under
// their global index, "mlp.experts.5.up_proj.weight") and exchanges tokens with the other ranks
// of `group` (expert_parallel.h). The default holds every expert and exchanges nothing.
// Expert tensor parallelism (`tensor_parallel`, ETP = TP under sequence parallelism): each expert
// is split over the TP group like a dense MLP (tp_slice) and runs on the whole TP group's rows.
struct ExpertShard {
  std::int64_t begin = 0;
  std::int64_t end = -1;          // -1: num_experts
  Communicator* group = nullptr;  // the EP group; null: every expert is local
  bool tensor_parallel = false;   // ETP = TP
};

class Linear : public torch::nn::Module {
 public:
  Linear(std::int64_t in, std::int64_t out, bool bias, const at::TensorOptions& options);
  at::Tensor forward(const at::Tensor& x) const;
  at::Tensor weight;
  at::Tensor bias;  // undefined without bias
};

class Embedding : public torch::nn::Module {
 public:
  // With TP, this rank holds vocabulary rows [vocab_begin, vocab_begin + vocab / TP).
  Embedding(std::int64_t vocab, std::int64_t dim, const at::TensorOptions& options,
            const TensorShard& tp = {});
  // tokens [...] -> [..., dim]; the rows of other ranks' tokens come from them (summed over TP).
  at::Tensor forward(const at::Tensor& tokens) const;
  at::Tensor weight;  // [vocab / TP, dim]
  std::int64_t vocab_begin = 0;
  TensorShard tp;
};

class RmsNorm : public torch::nn::Module {
 public:
  RmsNorm(std::int64_t dim, double eps, const at::TensorOptions& options);
  at::Tensor forward(const kernels::Ops& ops, const at::Tensor& x) const;
  at::Tensor weight;
  double eps;
};

class SwiGlu : public torch::nn::Module {
 public:
  // With TP (dense layers only), gate/up hold ffn / TP output rows and down as many input columns.
  SwiGlu(std::int64_t hidden, std::int64_t ffn, const at::TensorOptions& options,
         const TensorShard& tp = {});
  at::Tensor forward(const at::Tensor& x) const;
  std::shared_ptr<Linear> gate_proj, up_proj, down_proj;
  TensorShard tp;
};

class Attention : public torch::nn::Module {
 public:
  // With TP this rank holds heads / TP query heads and their K/V heads (tp_slice).
  Attention(const core::ModelSpec& spec, const at::TensorOptions& options,
            const TensorShard& tp = {});
  // x [B, T, H]; cos/sin [B, T, head_dim]; mask [B, 1, T, Tk] additive (0 or a large negative).
  // With a cache, k/v of the T new tokens are written at cache slots [length, length + T) of
  // layer `layer` and attention runs over slots [0, length + T).
  at::Tensor forward(const kernels::Ops& ops, const at::Tensor& x, const at::Tensor& cos,
                     const at::Tensor& sin, const at::Tensor& mask, KvCache* cache,
                     std::int64_t layer) const;
  std::shared_ptr<Linear> q_proj, k_proj, v_proj, o_proj;
  std::shared_ptr<RmsNorm> q_norm, k_norm;  // null unless qk_norm
  std::int64_t heads, kv_heads, head_dim;   // this rank's
  TensorShard tp;
};

class MoeBlock : public torch::nn::Module {
 public:
  // `tp`: with sequence parallelism the layer sees this rank's rows of the micro batch and
  // computes the aux loss over the TP group's. The experts are whole (ETP = 1) unless
  // shard.tensor_parallel (ETP = TP, which needs sequence parallelism).
  MoeBlock(const core::ModelSpec& spec, const at::TensorOptions& options, const ExpertShard& shard,
           const TensorShard& tp = {});
  // x [N, H]; valid [N] bool marks the tokens that count for the aux loss and the load stats
  // (undefined: all). Returns [N, H] and adds this layer's aux loss to *aux. With `split`
  // (sequence parallelism) x is this rank's rows of the micro batch.
  at::Tensor forward(const kernels::Ops& ops, const at::Tensor& x, const at::Tensor& valid,
                     at::Tensor* aux, const SequenceSplit* split = nullptr);
  std::shared_ptr<Linear> gate;                  // router, hidden -> experts, no bias
  std::vector<std::shared_ptr<SwiGlu>> experts;  // the local ones: global index expert_begin + i
  std::shared_ptr<SwiGlu> shared_expert;         // null without a shared expert
  std::shared_ptr<Linear> shared_expert_gate;    // null without the sigmoid gate
  TensorShard tp;
  std::int64_t num_experts, top_k;
  std::int64_t expert_begin = 0;
  Communicator* ep_group = nullptr;
  bool expert_tp = false;  // ETP = TP: this rank holds its TP slice of every local expert
  bool norm_topk_prob;
  bool collect_load = false;
  std::vector<std::int64_t> load;  // accumulated tokens per expert while collect_load
  double force_bias = 0.0;         // fault injection: added to expert 0's router logit

 private:
  // The expert outputs of x's tokens, weighted: every expert here (experts_local), or spread over
  // the EP group (experts_parallel); with ETP this rank's slices' partial outputs.
  at::Tensor experts_local(const at::Tensor& x, const kernels::RouterOutput& r) const;
  at::Tensor experts_parallel(const at::Tensor& x, const kernels::RouterOutput& r) const;
  // ETP: the experts run on the TP group's rows (gathered), their partial outputs summed back
  // onto this rank's rows.
  at::Tensor experts_tensor_parallel(const at::Tensor& x, const kernels::RouterOutput& r) const;
  // The aux loss under sequence parallelism (probs: the valid rows' router probabilities).
  void sequence_parallel_aux(const at::Tensor& probs, const at::Tensor& counts, at::Tensor* aux);
};

class DecoderLayer : public torch::nn::Module {
 public:
  DecoderLayer(const core::ModelSpec& spec, std::int64_t index, const at::TensorOptions& options,
               const ExpertShard& shard, const TensorShard& tp);
  // With `split` (sequence parallelism), x [local, H] is this rank's rows and valid [local]
  // theirs; otherwise x [B, T, H] and valid [B, T].
  at::Tensor forward(const kernels::Ops& ops, const at::Tensor& x, const at::Tensor& cos,
                     const at::Tensor& sin, const at::Tensor& mask, const at::Tensor& valid,
                     KvCache* cache, at::Tensor* aux, const SequenceSplit* split = nullptr);
  std::shared_ptr<RmsNorm> input_layernorm, post_attention_layernorm;
  std::shared_ptr<Attention> self_attn;
  std::shared_ptr<SwiGlu> mlp;    // dense layers
  std::shared_ptr<MoeBlock> moe;  // MoE layers (registered as "mlp")
  std::int64_t index;
};

// The backbone: registered as "model" inside QwenModel so names match Hugging Face.
class Backbone : public torch::nn::Module {
 public:
  Backbone(const core::ModelSpec& spec, const at::TensorOptions& options, const ExpertShard& shard,
           const TensorShard& tp);
  std::shared_ptr<Embedding> embed_tokens;
  std::vector<std::shared_ptr<DecoderLayer>> layers;
  std::shared_ptr<RmsNorm> norm;
};

class QwenModel : public torch::nn::Module {
 public:
  // Parameters are created with `options` (dtype, device). On the meta device nothing is
  // allocated and no initialization runs; otherwise weights are drawn from N(0, 0.02) with
  // `init_gen` (norm weights 1, biases 0), as Hugging Face initializes Qwen models. With an
  // expert shard the draws are those of the whole model (a sharded model starts with the
  // unsharded one's values for the experts it holds); so with a tensor shard (the slices it
  // holds, tp_slice), and with both. TP for an MoE model needs sequence parallelism
  // (tp.sequence_parallel; core::embedded_trainer_unsupported).
  QwenModel(const core::ModelSpec& spec, const kernels::Ops& ops, const at::TensorOptions& options,
            at::Generator* init_gen, const ExpertShard& shard = {}, const TensorShard& tp = {});

  // tokens [B, T] int64, positions [B, T] int64 (RoPE positions), key_valid [B, Tk] bool where
  // Tk = cache length + T (which key slots hold real tokens; causality is added here), valid
  // [B, T] bool marks real tokens for MoE statistics (undefined: all).
  ModelOutput forward(const at::Tensor& tokens, const at::Tensor& positions,
                      const at::Tensor& key_valid, const at::Tensor& valid, KvCache* cache);

  // Pipeline parallelism (training, no cache): decoder layers [begin, end) only. The first stage
  // (begin == 0) embeds `tokens`; the others start from `input`, the previous stage's output.
  // The last stage (end == num_layers) returns the final hidden as forward() does, the others
  // their output for the next stage (under sequence parallelism this rank's rows, [rows, H];
  // else [B, T, H]). aux_loss: this stage's layers' only.
  ModelOutput forward_stage(const at::Tensor& tokens, const at::Tensor& positions,
                            const at::Tensor& valid, const at::Tensor& input, std::int64_t begin,
                            std::int64_t end);

  // hidden [..., H] -> logits [..., V] (fp32), gathered over TP (for sampling; no gradient).
  at::Tensor logits(const at::Tensor& hidden) const;
  // The log-probs of `tokens` [N] after `hidden` [N, H] (the kernels' token_logprobs; with TP
  // the vocabulary-parallel form, tensor_parallel.h).
  kernels::TokenLogProbs token_logprobs(const at::Tensor& hidden, const at::Tensor& tokens,
                                        double temperature, bool with_entropy) const;
  // GRPO's loss from hidden states (the kernels' policy_loss; with TP from vocabulary-parallel
  // log-probs).
  kernels::PolicyLossOutputs policy_loss(const at::Tensor& hidden,
                                         const kernels::PolicyLossInputs& in,
                                         const kernels::PolicyLossParams& params) const;
  // The LM head's weight (the embedding when tied): this rank's vocabulary rows under TP.
  const at::Tensor& lm_head_weight() const;

  KvCache make_cache(std::int64_t batch, std::int64_t capacity) const;

  // MoE statistics.
  void set_collect_expert_load(bool on);
  std::vector<ExpertLoad> take_expert_load();
  void set_router_bias_fault(double bias);

  // Parameters in registration order with their Hugging Face names.
  std::vector<std::pair<std::string, at::Tensor>> named_params() const;
  // The unsharded model's parameter names and shapes in that order (from a meta-device model:
  // nothing is allocated): what a sharding plan (sharding_plan.h) places.
  static std::vector<std::pair<std::string, std::vector<std::int64_t>>> whole_shapes(
      const core::ModelSpec& spec, const kernels::Ops& ops);

  const core::ModelSpec& spec() const { return spec_; }
  const ExpertShard& expert_shard() const { return shard_; }
  const TensorShard& tensor_shard() const { return tp_; }
  // Whether forward passes are collectives of an EP group (every rank of it must run the same
  // sequence of forward and backward passes).
  bool expert_parallel() const { return shard_.group != nullptr; }
  // Whether `mine` holds on every rank that runs forward passes with this one.
  bool all_ranks(bool mine) const;
  const kernels::Ops& ops() const { return ops_; }

 private:
  ModelOutput run_layers(const at::Tensor& tokens, const at::Tensor& positions,
                         const at::Tensor& key_valid, const at::Tensor& valid, KvCache* cache,
                         const at::Tensor& input, std::int64_t begin, std::int64_t end);
  core::ModelSpec spec_;
  const kernels::Ops& ops_;
  ExpertShard shard_;
  TensorShard tp_;
  std::shared_ptr<Backbone> model_;
  std::shared_ptr<Linear> lm_head_;  // null when tied
  at::Tensor inv_freq_;              // [head_dim / 2], not a parameter
};

// A large negative used instead of -inf in attention masks (rows with every key masked stay
// finite: those are padding queries whose outputs are never used).
inline constexpr double kMaskValue = -1e9;

}  // namespace grpo::trainer
