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

  VisionTower vision;

  // The published total parameter count (for the 1 % test), 0 when none is published.
  std::int64_t published_params = 0;

  bool is_moe() const { return num_experts > 0; }
  std::int64_t moe_layers() const { return is_moe() ? num_layers - first_k_dense_layers : 0; }
  std::int64_t dense_layers() const { return num_layers - moe_layers(); }
  std::int64_t q_width() const { return num_attention_heads * head_dim; }
  std::int64_t kv_width() const { return num_kv_heads * head_dim; }
};

// Whether grpo-trainer builds this model exactly for sequences of up to `max_tokens` tokens
// (prompt + response): a Qwen2, Qwen3, Qwen3-MoE, Llama, Mistral or Mixtral architecture (or a
// TOML spec) with plain RoPE, and a sliding window (if any) of at least `max_tokens`, where it is
// full attention. Errors: kInvalidValue, one line naming what is missing, at spec.source. `plan`
// and `check` take every family hf_config reads.
Status embedded_trainer_supports(const ModelSpec& spec, std::int64_t max_tokens);

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

  std::int64_t total() const;  // saturates at INT64_MAX (see check_model_size)
  // Parameters touched per token: routed experts scaled to experts_per_token of num_experts.
  std::int64_t active(const ModelSpec& spec) const;
  // Everything that is not a routed expert (replicated across expert-parallel ranks).
  std::int64_t non_expert() const { return total() - routed_experts; }
};

// Per-layer building blocks (exposed so the trainer can check module by module).
std::int64_t attention_params_per_layer(const ModelSpec& spec);
std::int64_t swiglu_params(std::int64_t hidden, std::int64_t ffn);
std::int64_t moe_params_per_layer(const ModelSpec& spec);  // router + experts + shared

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
