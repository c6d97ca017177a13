// A decoder-only transformer's architecture, as published in the model's config.json, and the
// parameter counts that follow from it. The planner and grpo-trainer both build on these numbers:
// the trainer constructs exactly the modules counted here (tests check it end to end).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "grpo/core/result.h"

namespace grpo::core {

struct VisionTower {
  std::int64_t params = 0;       // total parameters of the vision encoder + merger (published)
  std::int64_t hidden_size = 0;  // encoder width
  std::int64_t num_layers = 0;   // encoder depth
  std::int64_t num_heads = 0;
  std::int64_t patch_size = 0;
  bool present() const { return params > 0; }
};

// How a layer's attention projects q, k and v. kGqa: q_proj, k_proj, v_proj, o_proj over
// num_attention_heads / num_kv_heads heads of head_dim (MHA and MQA included). kMla: DeepSeek's
// multi-head latent attention (modeling_deepseek_v3.py DeepseekV3Attention), sized by MlaDims.
enum class AttentionKind { kGqa, kMla };

// DeepseekV2Config / DeepseekV3Config's MLA sizes. q_lora_rank 0: a plain q_proj (q_lora_rank
// null, DeepSeek-V2-Lite); else q_a_proj h -> q_lora_rank, q_a_layernorm, q_b_proj. Keys and
// values go through kv_a_proj_with_mqa h -> kv_lora_rank + qk_rope_head_dim, kv_a_layernorm
// (kv_lora_rank) and kv_b_proj kv_lora_rank -> heads x (qk_nope_head_dim + v_head_dim).
struct MlaDims {
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  // DeepSeek-V3.2's lightning indexer (DeepseekV32ForCausalLM; 0 = none): per layer wq_b
  // [index_n_heads x index_head_dim, q_lora_rank], wk [index_head_dim, hidden], k_norm (a
  // LayerNorm: weight and bias) and weights_proj [index_n_heads, hidden], none with a bias.
  std::int64_t index_n_heads = 0;
  std::int64_t index_head_dim = 0;
};

struct ModelSpec {
  std::string name;    // our name: "qwen3-30b-moe"
  std::string hf_id;   // "Qwen/Qwen3-30B-A3B"
  std::string source;  // where the numbers come from (config.json URL)
  // The Hugging Face class config.json names ("LlamaForCausalLM"); empty for a TOML spec, whose
  // fields describe the Qwen blocks grpo-trainer builds.
  std::string architecture;
  // config.json's model_type ("llama", "kimi_k2"), which bridges look families up by; empty for
  // a TOML spec.
  std::string model_type;

  std::int64_t hidden_size = 0;
  std::int64_t num_layers = 0;
  std::int64_t num_attention_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;         // may differ from hidden_size / heads (Qwen3)
  std::int64_t ffn_hidden_size = 0;  // dense SwiGLU intermediate size (dense layers)
  std::int64_t vocab_size = 0;
  bool tied_embeddings = false;
  bool qkv_bias = false;  // Qwen2/2.5: bias on q, k, v projections
  bool qk_norm = false;   // Qwen3: RMSNorm over head_dim on q and k
  // OLMoE / OLMo2: the q and k norms span the whole projection (q_width / kv_width), not a head.
  bool qk_norm_full_width = false;
  bool o_bias = false;           // gpt-oss: a bias on o_proj too (with qkv_bias)
  bool attention_sinks = false;  // gpt-oss: one learned sink logit per head and layer
  AttentionKind attention = AttentionKind::kGqa;
  MlaDims mla;  // kMla only; head_dim is then qk_nope + qk_rope and num_kv_heads = heads
  // RMSNorms per decoder layer: 2 (input, post-attention), 4 for Gemma2/Gemma3 (pre- and
  // post-feedforward too). Each is hidden_size wide.
  std::int64_t norms_per_layer = 2;
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-6;
  std::int64_t max_position_embeddings = 0;
  // RoPE scaling type from rope_scaling / rope_parameters ("llama3", "yarn", ...); empty for
  // plain RoPE. It changes no parameter count; grpo-trainer implements plain RoPE only.
  std::string rope_scaling;
  // Sliding-window attention: the window in tokens and how many layers use it (0: none).
  std::int64_t sliding_window = 0;
  std::int64_t sliding_window_layers = 0;

  // Mixture of experts. num_experts == 0 means a dense model.
  std::int64_t num_experts = 0;
  std::int64_t experts_per_token = 0;              // top-k
  std::int64_t moe_ffn_hidden_size = 0;            // each routed expert's SwiGLU intermediate size
  std::int64_t num_shared_experts = 0;             // always-on experts (0 for Qwen3-MoE)
  std::int64_t shared_expert_ffn_hidden_size = 0;  // intermediate size of each shared expert
  bool shared_expert_gate = false;        // Qwen2-MoE style sigmoid gate on the shared expert
  bool norm_topk_prob = true;             // renormalize the top-k router weights
  std::int64_t first_k_dense_layers = 0;  // leading layers with a dense FFN instead of MoE
  bool router_bias = false;               // gpt-oss: the router Linear has a bias (num_experts)
  bool router_score_bias = false;  // DeepSeek-V3 / GLM-4.5: e_score_correction_bias (num_experts)
  bool expert_bias = false;        // gpt-oss: biases on each expert's gate/up (2 f) and down (h)

  // Multi-token-prediction layers the published checkpoint stores after the decoder layers
  // (num_nextn_predict_layers: DeepSeek-V3, GLM-4.5). transformers' modeling files skip them
  // (DeepseekV3Model's _keys_to_ignore_on_load_unexpected), so they are counted apart
  // (ParamCounts::mtp) and left out of total(). Each is a decoder layer (MoE when the model is)
  // plus enorm and hnorm, eh_proj (2h -> h) and shared_head.norm; with mtp_stores_embeddings also
  // its own embed_tokens and shared_head.head (V x h each), as DeepSeek-V3's safetensors do.
  std::int64_t mtp_layers = 0;
  bool mtp_stores_embeddings = false;

  VisionTower vision;

  // The published total parameter count (for the 1 % test), 0 when none is published.
  std::int64_t published_params = 0;

  bool is_moe() const { return num_experts > 0; }
  std::int64_t moe_layers() const { return is_moe() ? num_layers - first_k_dense_layers : 0; }
  std::int64_t dense_layers() const { return num_layers - moe_layers(); }
  bool is_mla() const { return attention == AttentionKind::kMla; }
  // Activation widths per token of one layer's attention: q and k (for MLA heads x (qk_nope +
  // qk_rope), k after kv_b_proj and the shared rope part), v and the attention output (o_proj's
  // input: heads x v_head_dim for MLA). For GQA v_width() == kv_width(), o_width() == q_width().
  std::int64_t q_width() const { return num_attention_heads * head_dim; }
  std::int64_t kv_width() const { return num_kv_heads * head_dim; }
  std::int64_t v_width() const {
    return is_mla() ? num_attention_heads * mla.v_head_dim : kv_width();
  }
  std::int64_t o_width() const {
    return is_mla() ? num_attention_heads * mla.v_head_dim : q_width();
  }
  // KV-cache elements per token and layer on one rank of a rollout engine with tensor parallelism
  // `tp`. GQA: k and v of the rank's KV heads (split over TP, replicated when TP exceeds them).
  // MLA: vLLM caches the latent kv_lora_rank + qk_rope_head_dim per token, whole on every rank
  // (vllm/attention/backends/mla: one "head" of that width, not split by TP).
  std::int64_t kv_cache_width(std::int64_t tp) const {
    if (is_mla()) return mla.kv_lora_rank + mla.qk_rope_head_dim;
    return 2 * ((num_kv_heads + tp - 1) / tp) * head_dim;
  }
};

// Whether grpo-trainer builds this model exactly for sequences of up to `max_tokens` tokens
// (prompt + response): a Qwen2, Qwen3, Qwen3-MoE, Llama, Mistral or Mixtral architecture (or a
// TOML spec) with plain RoPE, and a sliding window (if any) of at least `max_tokens`, where it is
// full attention. Errors: kInvalidValue, one line naming what is missing, at spec.source. `plan`
// and `check` take every family hf_config reads.
Status embedded_trainer_supports(const ModelSpec& spec, std::int64_t max_tokens);

// A Hugging Face class whose modules grpo-trainer's blocks are, with its config.json model_type.
struct TrainedClass {
  std::string_view architecture, model_type;
};
// The entry for `architecture`, or nullptr when grpo-trainer does not build that class.
const TrainedClass* embedded_trainer_class(std::string_view architecture);

// Parameter counts by part, in parameters (not bytes).
struct ParamCounts {
  std::int64_t embedding = 0;       // input token embedding (vocab x hidden)
  std::int64_t lm_head = 0;         // output projection, 0 when tied
  std::int64_t attention = 0;       // all layers: q, k, v, o (+ biases, q/k norms)
  std::int64_t dense_mlp = 0;       // all dense-FFN layers
  std::int64_t router = 0;          // all MoE layers' routers
  std::int64_t routed_experts = 0;  // all MoE layers' routed experts
  std::int64_t shared_experts = 0;  // all MoE layers' shared experts (+ gates)
  std::int64_t norms = 0;           // per-layer RMSNorms and the final norm
  std::int64_t vision = 0;          // vision tower
  std::int64_t mtp = 0;  // multi-token-prediction layers (ModelSpec::mtp_layers), not in total()

  // Everything but `mtp`: what transformers' modeling file builds and the trainers and rollout
  // engines load. Saturates at INT64_MAX (see check_model_size).
  std::int64_t total() const;
  // What the published checkpoint stores: total() + mtp.
  std::int64_t stored() const;
  // Parameters touched per token: routed experts scaled to experts_per_token of num_experts.
  std::int64_t active(const ModelSpec& spec) const;
  // Everything that is not a routed expert (replicated across expert-parallel ranks).
  std::int64_t non_expert() const { return total() - routed_experts; }
};

// Per-layer building blocks (exposed so the trainer can check module by module).
std::int64_t attention_params_per_layer(const ModelSpec& spec);
std::int64_t swiglu_params(std::int64_t hidden, std::int64_t ffn);
std::int64_t moe_params_per_layer(const ModelSpec& spec);  // router + experts + shared
// Pieces of those: the router (weight, bias, score-correction bias) and one routed expert.
std::int64_t router_params_per_layer(const ModelSpec& spec);
std::int64_t expert_params(const ModelSpec& spec);
// The decoder layer's RMSNorms (norms_per_layer x hidden_size).
std::int64_t norm_params_per_layer(const ModelSpec& spec);
// Attention parameters Megatron keeps whole on every TP rank: Qwen3's per-head q/k norms; for MLA
// the down projections q_a_proj and kv_a_proj_with_mqa with their norms (MLASelfAttention builds
// linear_q_down_proj / linear_kv_down_proj unsplit) and DeepSeek-V3.2's indexer (vLLM's Indexer
// builds it of ReplicatedLinear).
std::int64_t attention_replicated_params_per_layer(const ModelSpec& spec);
// DeepSeek-V3.2's indexer in one layer (MlaDims::index_n_heads; 0 without one), part of
// attention_params_per_layer.
std::int64_t indexer_params_per_layer(const ModelSpec& spec);
// One multi-token-prediction layer as the published checkpoint stores it (see mtp_layers).
std::int64_t mtp_params_per_layer(const ModelSpec& spec);

// Every count saturates at INT64_MAX instead of overflowing.
ParamCounts count_params(const ModelSpec& spec);

// The largest model planned: 2^50 parameters (about 500 times the largest published checkpoint),
// so that parameters times bytes per parameter, per-layer sums and the memory model's products
// stay far inside int64 and double's exact integers.
inline constexpr std::int64_t kMaxModelParams = std::int64_t{1} << 50;
// Refuses a spec whose parameter count is above kMaxModelParams (every reader of a model file
// calls it before anything multiplies its sizes). Errors: kInvalidValue, at `file`.
Status check_model_size(const ModelSpec& spec, std::string_view file);

// a * b and a + b, saturating at INT64_MAX (non-negative sizes).
std::int64_t sat_mul(std::int64_t a, std::int64_t b);
std::int64_t sat_add(std::int64_t a, std::int64_t b);

}  // namespace grpo::core
