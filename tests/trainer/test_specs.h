// Model specs built in code for the trainer's tests (the same numbers as profiles/models/).
#pragma once

#include "grpo/core/model_spec.h"

namespace grpo::trainer::testing {

inline core::ModelSpec tiny_dense() {
  core::ModelSpec s;
  s.name = "tiny-dense";
  s.hidden_size = 128;
  s.num_layers = 4;
  s.num_attention_heads = 4;
  s.num_kv_heads = 2;
  s.head_dim = 32;
  s.ffn_hidden_size = 384;
  s.vocab_size = 64;
  s.qk_norm = true;
  s.tied_embeddings = false;
  s.rope_theta = 10000.0;
  s.max_position_embeddings = 256;
  return s;
}

inline core::ModelSpec tiny_moe() {
  core::ModelSpec s = tiny_dense();
  s.name = "tiny-moe";
  s.num_experts = 8;
  s.experts_per_token = 2;
  s.moe_ffn_hidden_size = 128;
  s.num_shared_experts = 1;
  s.shared_expert_ffn_hidden_size = 128;
  s.shared_expert_gate = true;
  s.norm_topk_prob = true;
  return s;
}

inline core::ModelSpec qwen3_30b_moe() {
  core::ModelSpec s;
  s.name = "qwen3-30b-moe";
  s.hidden_size = 2048;
  s.num_layers = 48;
  s.num_attention_heads = 32;
  s.num_kv_heads = 4;
  s.head_dim = 128;
  s.ffn_hidden_size = 6144;
  s.vocab_size = 151936;
  s.qk_norm = true;
  s.rope_theta = 1e6;
  s.num_experts = 128;
  s.experts_per_token = 8;
  s.moe_ffn_hidden_size = 768;
  s.norm_topk_prob = true;
  return s;
}

// Qwen2.5-7B: dense, qkv bias, no qk norm, untied.
inline core::ModelSpec qwen25_7b() {
  core::ModelSpec s;
  s.name = "qwen2.5-7b";
  s.hidden_size = 3584;
  s.num_layers = 28;
  s.num_attention_heads = 28;
  s.num_kv_heads = 4;
  s.head_dim = 128;
  s.ffn_hidden_size = 18944;
  s.vocab_size = 152064;
  s.qkv_bias = true;
  s.rope_theta = 1e6;
  return s;
}

// Qwen1.5-MoE-A2.7B: shared expert with a sigmoid gate, qkv bias.
inline core::ModelSpec qwen15_moe() {
  core::ModelSpec s;
  s.name = "qwen1.5-moe-a2.7b";
  s.hidden_size = 2048;
  s.num_layers = 24;
  s.num_attention_heads = 16;
  s.num_kv_heads = 16;
  s.head_dim = 128;
  s.ffn_hidden_size = 5632;
  s.vocab_size = 151936;
  s.qkv_bias = true;
  s.num_experts = 60;
  s.experts_per_token = 4;
  s.moe_ffn_hidden_size = 1408;
  s.num_shared_experts = 1;
  s.shared_expert_ffn_hidden_size = 5632;
  s.shared_expert_gate = true;
  s.norm_topk_prob = false;
  return s;
}

}  // namespace grpo::trainer::testing
