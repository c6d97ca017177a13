#include "grpo/core/model_spec.h"

#include <algorithm>
#include <limits>

namespace grpo::core {

// The counts below are products of sizes read from files (up to 2^24 each): they saturate at
// INT64_MAX instead of wrapping, so check_model_size sees a too-large model as too large (a
// wrapped 1.8e19 once showed as "5.4B").
std::int64_t sat_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<std::int64_t>::max() : r;
}
std::int64_t sat_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<std::int64_t>::max() : r;
}

namespace {
std::int64_t mul3(std::int64_t a, std::int64_t b, std::int64_t c) {
  return sat_mul(sat_mul(a, b), c);
}
}  // namespace

std::int64_t swiglu_params(std::int64_t hidden, std::int64_t ffn) {
  return mul3(3, hidden, ffn);
}

namespace {
// MLA (modeling_deepseek_v3.py DeepseekV3Attention; DeepseekV2Attention has the same weights):
// q_proj, or q_a_proj + q_a_layernorm + q_b_proj; kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj;
// o_proj. attention_bias (qkv_bias here) puts a bias on q_a_proj, kv_a_proj_with_mqa and o_proj.
// DeepSeek-V3.2 adds its indexer (MlaDims::index_n_heads).
std::int64_t mla_params_per_layer(const ModelSpec& s) {
  const MlaDims& d = s.mla;
  const std::int64_t h = s.hidden_size, heads = s.num_attention_heads;
  const std::int64_t q_out = sat_mul(heads, sat_add(d.qk_nope_head_dim, d.qk_rope_head_dim));
  const std::int64_t kv_a = sat_add(d.kv_lora_rank, d.qk_rope_head_dim);
  std::int64_t n = 0;
  if (d.q_lora_rank == 0) {
    n = sat_mul(h, q_out);
  } else {
    n = sat_add(sat_mul(h, d.q_lora_rank), d.q_lora_rank);  // q_a_proj, q_a_layernorm
    n = sat_add(n, sat_mul(d.q_lora_rank, q_out));          // q_b_proj
    if (s.qkv_bias) n = sat_add(n, d.q_lora_rank);
  }
  n = sat_add(n, sat_add(sat_mul(h, kv_a), d.kv_lora_rank));  // kv_a_proj_with_mqa, its norm
  n = sat_add(n, mul3(d.kv_lora_rank, heads, sat_add(d.qk_nope_head_dim, d.v_head_dim)));
  n = sat_add(n, mul3(heads, d.v_head_dim, h));  // o_proj
  if (s.qkv_bias) n = sat_add(n, sat_add(kv_a, h));
  return sat_add(n, indexer_params_per_layer(s));
}
}  // namespace

std::int64_t indexer_params_per_layer(const ModelSpec& s) {
  const MlaDims& d = s.mla;
  if (d.index_n_heads == 0) return 0;
  std::int64_t n = mul3(d.q_lora_rank, d.index_n_heads, d.index_head_dim);  // wq_b
  n = sat_add(n, sat_mul(s.hidden_size, d.index_head_dim));                 // wk
  n = sat_add(n, sat_mul(2, d.index_head_dim));                             // k_norm
  return sat_add(n, sat_mul(s.hidden_size, d.index_n_heads));               // weights_proj
}

std::int64_t attention_params_per_layer(const ModelSpec& s) {
  if (s.is_mla()) return mla_params_per_layer(s);
  const std::int64_t q = sat_mul(s.num_attention_heads, s.head_dim);
  const std::int64_t kv = sat_mul(s.num_kv_heads, s.head_dim);
  std::int64_t n = sat_add(sat_mul(s.hidden_size, q), mul3(2, s.hidden_size, kv));
  n = sat_add(n, sat_mul(q, s.hidden_size));
  if (s.qkv_bias) n = sat_add(n, sat_add(q, sat_mul(2, kv)));
  if (s.o_bias) n = sat_add(n, s.hidden_size);
  if (s.qk_norm) n = sat_add(n, s.qk_norm_full_width ? sat_add(q, kv) : sat_mul(2, s.head_dim));
  if (s.attention_sinks) n = sat_add(n, s.num_attention_heads);
  return n;
}

std::int64_t attention_replicated_params_per_layer(const ModelSpec& s) {
  if (s.is_mla()) {
    const MlaDims& d = s.mla;
    std::int64_t n = sat_mul(s.hidden_size, sat_add(d.kv_lora_rank, d.qk_rope_head_dim));
    n = sat_add(n, d.kv_lora_rank);
    if (d.q_lora_rank > 0) n = sat_add(n, sat_mul(sat_add(s.hidden_size, 1), d.q_lora_rank));
    return sat_add(n, indexer_params_per_layer(s));  // ReplicatedLinear in vLLM's Indexer
  }
  return s.qk_norm && !s.qk_norm_full_width ? sat_mul(2, s.head_dim) : 0;
}

std::int64_t norm_params_per_layer(const ModelSpec& s) {
  return sat_mul(s.norms_per_layer, s.hidden_size);
}

std::int64_t router_params_per_layer(const ModelSpec& s) {
  if (!s.is_moe()) return 0;
  std::int64_t n = sat_mul(s.hidden_size, s.num_experts);
  if (s.router_bias) n = sat_add(n, s.num_experts);
  if (s.router_score_bias) n = sat_add(n, s.num_experts);
  return n;
}

// gpt-oss (modeling_gpt_oss.py GptOssExperts) stores the experts fused: gate_up_proj
// [E, h, 2f] + gate_up_proj_bias [E, 2f], down_proj [E, f, h] + down_proj_bias [E, h]; per
// expert the SwiGLU's 3 h f and 2 f + h biases.
std::int64_t expert_params(const ModelSpec& s) {
  std::int64_t n = swiglu_params(s.hidden_size, s.moe_ffn_hidden_size);
  if (s.expert_bias) n = sat_add(n, sat_add(sat_mul(2, s.moe_ffn_hidden_size), s.hidden_size));
  return n;
}

std::int64_t moe_params_per_layer(const ModelSpec& s) {
  if (!s.is_moe()) return 0;
  std::int64_t n = router_params_per_layer(s);
  n = sat_add(n, sat_mul(s.num_experts, expert_params(s)));
  n = sat_add(n, sat_mul(s.num_shared_experts,
                         swiglu_params(s.hidden_size, s.shared_expert_ffn_hidden_size)));
  if (s.num_shared_experts > 0 && s.shared_expert_gate) n = sat_add(n, s.hidden_size);
  return n;
}

std::int64_t mtp_params_per_layer(const ModelSpec& s) {
  const std::int64_t h = s.hidden_size;
  std::int64_t n = sat_add(attention_params_per_layer(s), norm_params_per_layer(s));
  n = sat_add(n, s.is_moe() ? moe_params_per_layer(s) : swiglu_params(h, s.ffn_hidden_size));
  n = sat_add(n, sat_add(mul3(2, h, h), sat_mul(3, h)));  // eh_proj; enorm, hnorm, shared norm
  if (s.mtp_stores_embeddings) n = sat_add(n, mul3(2, s.vocab_size, h));
  return n;
}

std::int64_t ParamCounts::total() const {
  std::int64_t n = 0;
  for (std::int64_t part : {embedding, lm_head, attention, dense_mlp, router, routed_experts,
                            shared_experts, norms, vision}) {
    n = sat_add(n, part);
  }
  return n;
}

std::int64_t ParamCounts::stored() const {
  return sat_add(total(), mtp);
}

namespace {
// Llama and Mistral are Qwen2's blocks without the q/k/v bias; Mixtral's sparse block routes as
// Qwen3-MoE's with norm_topk_prob (softmax, top-k, renormalized: modeling_mixtral.py
// MixtralSparseMoeBlock).
constexpr TrainedClass kTrainedClasses[] = {
    {"Qwen2ForCausalLM", "qwen2"},        {"Qwen3ForCausalLM", "qwen3"},
    {"Qwen3MoeForCausalLM", "qwen3_moe"}, {"LlamaForCausalLM", "llama"},
    {"MistralForCausalLM", "mistral"},    {"MixtralForCausalLM", "mixtral"}};
}  // namespace

const TrainedClass* embedded_trainer_class(std::string_view architecture) {
  for (const TrainedClass& c : kTrainedClasses) {
    if (c.architecture == architecture) return &c;
  }
  return nullptr;
}

Status embedded_trainer_supports(const ModelSpec& spec, std::int64_t max_tokens) {
  const SourceLocation where{spec.source, 0, 0};
  const std::string& a = spec.architecture;
  if (!a.empty() && embedded_trainer_class(a) == nullptr) {
    std::string names;
    for (const TrainedClass& c : kTrainedClasses) {
      names += (names.empty() ? "" : ", ") + std::string(c.architecture);
    }
    return make_error(ErrorKind::kInvalidValue,
                      "grpo-trainer does not train " + a + " yet (it trains " + names +
                          "); `plan` and `check` support it: train it with "
                          "`grpo-launch submit --engine verl` or your own --trainer-cmd",
                      where);
  }
  if (!spec.rope_scaling.empty()) {
    return make_error(ErrorKind::kInvalidValue,
                      "rope scaling '" + spec.rope_scaling +
                          "' is not implemented in grpo-trainer (plain RoPE only)",
                      where);
  }
  // A key at distance d is seen when d < window (modeling_mistral.py's sliding-window mask); with
  // at most `max_tokens` tokens every d is below max_tokens, so window >= max_tokens is full
  // attention.
  if (spec.sliding_window_layers > 0 && spec.sliding_window < max_tokens) {
    return make_error(ErrorKind::kInvalidValue,
                      "sliding-window attention (" + std::to_string(spec.sliding_window_layers) +
                          " layers, window " + std::to_string(spec.sliding_window) +
                          " tokens) is not implemented in grpo-trainer (full attention only): "
                          "it is the same only for sequences up to the window, and this run's "
                          "are up to " +
                          std::to_string(max_tokens) + " tokens",
                      where);
  }
  return ok_status();
}

Status check_model_size(const ModelSpec& spec, std::string_view file) {
  const std::int64_t total = count_params(spec).stored();
  if (total > kMaxModelParams) {
    return make_error(
        ErrorKind::kInvalidValue,
        "the model is too large: " +
            (total == std::numeric_limits<std::int64_t>::max() ? std::string("more than 9.2e18")
                                                               : std::to_string(total)) +
            " parameters from these sizes (at most 2^50 = 1,125,899,906,842,624 are planned)",
        SourceLocation{std::string(file), 0, 0});
  }
  return ok_status();
}

std::int64_t ParamCounts::active(const ModelSpec& spec) const {
  if (!spec.is_moe() || spec.num_experts == 0) return total();
  // routed x k / E without the product: routed = q E + r gives q k + r k / E (k <= E).
  const std::int64_t q = routed_experts / spec.num_experts, r = routed_experts % spec.num_experts;
  const std::int64_t scaled =
      q * spec.experts_per_token + r * spec.experts_per_token / spec.num_experts;
  return total() - routed_experts + scaled;
}

ParamCounts count_params(const ModelSpec& s) {
  ParamCounts c;
  c.embedding = sat_mul(s.vocab_size, s.hidden_size);
  c.lm_head = s.tied_embeddings ? 0 : c.embedding;
  c.attention = sat_mul(s.num_layers, attention_params_per_layer(s));
  c.dense_mlp = sat_mul(s.dense_layers(), swiglu_params(s.hidden_size, s.ffn_hidden_size));
  if (s.is_moe()) {
    const std::int64_t layers = s.moe_layers();
    c.router = sat_mul(layers, router_params_per_layer(s));
    c.routed_experts = mul3(layers, s.num_experts, expert_params(s));
    c.shared_experts = sat_mul(
        layers, sat_add(sat_mul(s.num_shared_experts,
                                swiglu_params(s.hidden_size, s.shared_expert_ffn_hidden_size)),
                        s.num_shared_experts > 0 && s.shared_expert_gate ? s.hidden_size : 0));
  }
  c.norms = sat_add(sat_mul(s.num_layers, norm_params_per_layer(s)), s.hidden_size);
  c.vision = s.vision.params;
  c.mtp = sat_mul(s.mtp_layers, mtp_params_per_layer(s));
  return c;
}

}  // namespace grpo::core
