#include "grpo/core/model_spec.h"

namespace grpo::core {

std::int64_t swiglu_params(std::int64_t hidden, std::int64_t ffn) {
  return 3 * hidden * ffn;
}

std::int64_t attention_params_per_layer(const ModelSpec& s) {
  const std::int64_t q = s.q_width();
  const std::int64_t kv = s.kv_width();
  std::int64_t n = s.hidden_size * q + 2 * s.hidden_size * kv + q * s.hidden_size;
  if (s.qkv_bias) n += q + 2 * kv;
  if (s.qk_norm) n += 2 * s.head_dim;
  return n;
}

std::int64_t moe_params_per_layer(const ModelSpec& s) {
  if (!s.is_moe()) return 0;
  std::int64_t n = s.hidden_size * s.num_experts;  // router
  n += s.num_experts * swiglu_params(s.hidden_size, s.moe_ffn_hidden_size);
  n += s.num_shared_experts * swiglu_params(s.hidden_size, s.shared_expert_ffn_hidden_size);
  if (s.num_shared_experts > 0 && s.shared_expert_gate) n += s.hidden_size;
  return n;
}

std::int64_t ParamCounts::active(const ModelSpec& spec) const {
  if (!spec.is_moe() || spec.num_experts == 0) return total();
  return total() - routed_experts + routed_experts * spec.experts_per_token / spec.num_experts;
}

ParamCounts count_params(const ModelSpec& s) {
  ParamCounts c;
  c.embedding = s.vocab_size * s.hidden_size;
  c.lm_head = s.tied_embeddings ? 0 : s.vocab_size * s.hidden_size;
  c.attention = s.num_layers * attention_params_per_layer(s);
  c.dense_mlp = s.dense_layers() * swiglu_params(s.hidden_size, s.ffn_hidden_size);
  if (s.is_moe()) {
    const std::int64_t layers = s.moe_layers();
    c.router = layers * s.hidden_size * s.num_experts;
    c.routed_experts = layers * s.num_experts * swiglu_params(s.hidden_size, s.moe_ffn_hidden_size);
    c.shared_experts =
        layers *
        (s.num_shared_experts * swiglu_params(s.hidden_size, s.shared_expert_ffn_hidden_size) +
         (s.num_shared_experts > 0 && s.shared_expert_gate ? s.hidden_size : 0));
  }
  c.norms = s.num_layers * 2 * s.hidden_size + s.hidden_size;
  c.vision = s.vision.params;
  return c;
}

}  // namespace grpo::core
