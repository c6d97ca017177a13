// config.json keys of the families beyond Qwen, Llama, Mistral and Mixtral (hf_config.cpp reads
// the common keys first): DeepSeek-V2/V3 (and Kimi-K2, Moonlight), GLM-4.5, gpt-oss, Gemma2/3,
// OLMoE and OLMo2. Each reader names the transformers classes whose weights it counts.
#include <algorithm>
#include <string>

#include "hf_config_reader.h"

namespace grpo::core::hf_detail {
namespace {

// The top-k read with `def`, refused when it exceeds the experts (a default too: torch.topk
// would fail in the first forward, and the active count exceed the total).
Status read_top_k(const ConfigReader& r, const char* key, std::int64_t def, ModelSpec& m) {
  GRPO_TRY_STATUS(r.read_int(key, m.experts_per_token, def, 1, kMaxExperts));
  if (m.experts_per_token > m.num_experts) {
    return r.fail(ErrorKind::kInvalidValue, key,
                  std::to_string(m.experts_per_token) + " is more than the " +
                      std::to_string(m.num_experts) + " experts");
  }
  return ok_status();
}

// q/k/v (and o) biases from attention_bias.
Status read_attention_bias(const ConfigReader& r, bool def, bool on_o, ModelSpec& m) {
  GRPO_TRY_STATUS(r.read_bool("attention_bias", m.qkv_bias, def));
  m.o_bias = on_o && m.qkv_bias;
  return ok_status();
}

// first_k_dense_replace: layer i is MoE when i >= it (DeepseekV3DecoderLayer,
// Glm4MoeDecoderLayer), so a value past the last layer (the default 3 with fewer layers: found by
// fuzz_hf_config, a negative MoE layer count) makes every layer dense.
Status read_first_dense(const ConfigReader& r, std::int64_t def, ModelSpec& m) {
  std::int64_t k = 0;
  GRPO_TRY_STATUS(r.read_int("first_k_dense_replace", k, def, 0, kMaxLayers));
  m.first_k_dense_layers = std::min(k, m.num_layers);
  return ok_status();
}

// DeepseekV3Config / DeepseekV2Config's MLA sizes (see MlaDims). q_lora_rank null: a plain
// q_proj. head_dim becomes qk_nope + qk_rope; num_kv_heads the heads (MLA computes k and v for
// every head from the latent, so there are no KV groups; the configs say the same).
Status read_mla(const ConfigReader& r, ModelSpec& m) {
  m.attention = AttentionKind::kMla;
  MlaDims& d = m.mla;
  GRPO_TRY_STATUS(r.read_int_or_null("q_lora_rank", d.q_lora_rank, 1536, 0, 1, kMaxDim));
  GRPO_TRY_STATUS(r.read_int("kv_lora_rank", d.kv_lora_rank, 512, 1, kMaxDim));
  GRPO_TRY_STATUS(r.read_int("qk_nope_head_dim", d.qk_nope_head_dim, 128, 0, 1 << 16));
  GRPO_TRY_STATUS(r.read_int("qk_rope_head_dim", d.qk_rope_head_dim, 64, 2, 1 << 16));
  if (d.qk_rope_head_dim % 2 != 0) {
    return r.fail(ErrorKind::kInvalidValue, "qk_rope_head_dim",
                  "rotary embeddings need an even qk_rope_head_dim");
  }
  GRPO_TRY_STATUS(r.read_int("v_head_dim", d.v_head_dim, 128, 1, 1 << 16));
  m.head_dim = d.qk_nope_head_dim + d.qk_rope_head_dim;
  m.num_kv_heads = m.num_attention_heads;
  // DeepseekV3Attention: attention_bias on q_a_proj, kv_a_proj_with_mqa and o_proj.
  return r.read_bool("attention_bias", m.qkv_bias, false);
}

// DeepSeek-V3.2's indexer (DeepSeek-V3.2-Exp inference/model.py class Indexer; vLLM
// deepseek_v2.py Indexer, whose projections are ReplicatedLinear): it projects the query latent,
// so it needs q_lora_rank, and splits qk_rope_head_dim off each of its heads. index_topk (the
// tokens each query keeps) holds no weights; it is only checked.
Status read_indexer(const ConfigReader& r, ModelSpec& m) {
  MlaDims& d = m.mla;
  if (d.q_lora_rank == 0) {
    return r.fail(ErrorKind::kInvalidValue, "q_lora_rank",
                  "DeepSeek-V3.2's indexer projects the query latent: q_lora_rank must be set");
  }
  GRPO_TRY_STATUS(r.read_int("index_n_heads", d.index_n_heads, 64, 1, 1 << 16));
  GRPO_TRY_STATUS(r.read_int("index_head_dim", d.index_head_dim, 128, 1, 1 << 16));
  if (d.index_head_dim < d.qk_rope_head_dim) {
    return r.fail(ErrorKind::kInvalidValue, "index_head_dim",
                  std::to_string(d.index_head_dim) + " is less than qk_rope_head_dim (" +
                      std::to_string(d.qk_rope_head_dim) + "), the part of it that is rotated");
  }
  std::int64_t top_k = 0;
  return r.read_int("index_topk", top_k, 2048, 1, kMaxPositions);
}

}  // namespace

// DeepSeek-V2 and V3 (modeling_deepseek_v3.py DeepseekV3ForCausalLM, modeling_deepseek_v2.py
// DeepseekV2ForCausalLM; Kimi-K2 and Moonlight are published as DeepseekV3ForCausalLM): MLA on
// every layer; first_k_dense_replace dense layers (DeepseekV3MLP of intermediate_size), then
// DeepseekV3MoE layers: n_routed_experts SwiGLU experts of moe_intermediate_size, the router
// (DeepseekV3TopkRouter: weight [E, h] and the e_score_correction_bias buffer [E], which the
// checkpoints store; DeepSeek-V2's only with topk_method noaux_tc, as vLLM's DeepseekV2MoE) and
// one fused shared expert of n_shared_experts x moe_intermediate_size. num_nextn_predict_layers
// MTP layers (DeepSeek-V3's model.layers.61) hold their own embed_tokens and shared_head.head in
// the published safetensors: counted in ParamCounts::mtp. DeepSeek-V3.2 (DeepseekV32ForCausalLM)
// is V3 plus a lightning indexer in every layer's attention (read_indexer).
Status read_deepseek(const ConfigReader& r, Arch arch, ModelSpec& m) {
  const bool v3 = arch != Arch::kDeepseekV2;
  GRPO_TRY_STATUS(read_mla(r, m));
  if (arch == Arch::kDeepseekV32) GRPO_TRY_STATUS(read_indexer(r, m));
  GRPO_TRY_STATUS(r.read_int("num_nextn_predict_layers", m.mtp_layers, 0, 0, 64));
  m.mtp_stores_embeddings = true;
  GRPO_TRY_STATUS(
      r.read_int_or_null("n_routed_experts", m.num_experts, v3 ? 256 : 64, 0, 0, kMaxExperts));
  if (m.num_experts == 0) return ok_status();  // DeepseekV2Config's None: dense layers only
  GRPO_TRY_STATUS(read_top_k(r, "num_experts_per_tok", v3 ? 8 : 1, m));
  if (!v3 && r.is_null("num_experts_per_tok")) {
    return r.fail(ErrorKind::kInvalidValue, "num_experts_per_tok",
                  "missing: DeepseekV2Config has no default top-k");
  }
  GRPO_TRY_STATUS(
      r.read_int("moe_intermediate_size", m.moe_ffn_hidden_size, v3 ? 2048 : 1407, 1, kMaxDim));
  std::int64_t shared = 0;
  GRPO_TRY_STATUS(r.read_int_or_null("n_shared_experts", shared, v3 ? 1 : 2, 0, 0, 1 << 10));
  m.num_shared_experts = shared > 0 ? 1 : 0;
  m.shared_expert_ffn_hidden_size = shared * m.moe_ffn_hidden_size;
  GRPO_TRY_STATUS(read_first_dense(r, v3 ? 3 : 0, m));
  std::int64_t freq = 1;
  GRPO_TRY_STATUS(r.read_int("moe_layer_freq", freq, 1, 1, kMaxLayers));
  if (freq != 1) {
    return r.fail(ErrorKind::kInvalidValue, "moe_layer_freq",
                  std::to_string(freq) +
                      " is not supported (only 1: every layer from first_k_dense_replace is MoE)");
  }
  GRPO_TRY_STATUS(r.read_bool("norm_topk_prob", m.norm_topk_prob, v3));
  std::string method;
  GRPO_TRY_STATUS(r.read_string("topk_method", method, v3 ? "noaux_tc" : "greedy"));
  m.router_score_bias = v3 || method == "noaux_tc";
  return ok_status();
}

// GLM-4.5 and GLM-4.5-Air (modeling_glm4_moe.py Glm4MoeForCausalLM): Glm4MoeAttention with a
// bias on q, k and v (attention_bias; none on o_proj) and, with use_qk_norm, RMSNorms over
// head_dim on q and k; partial_rotary_factor rotates part of each head (no weights). Layers from
// first_k_dense_replace are Glm4MoeMoE: n_routed_experts experts of moe_intermediate_size,
// Glm4MoeTopkRouter (weight [E, h] + e_score_correction_bias [E]) and one shared expert of
// n_shared_experts x moe_intermediate_size. The MTP layers (num_nextn_predict_layers) are stored
// like DeepSeek-V3's, embed_tokens and shared_head.head included.
Status read_glm4_moe(const ConfigReader& r, ModelSpec& m) {
  GRPO_TRY_STATUS(read_attention_bias(r, false, false, m));
  GRPO_TRY_STATUS(r.read_bool("use_qk_norm", m.qk_norm, false));
  double rotary = 0.5;
  GRPO_TRY_STATUS(r.read_positive_double("partial_rotary_factor", rotary, 0.5));
  if (rotary > 1.0) {
    return r.fail(ErrorKind::kInvalidValue, "partial_rotary_factor", "expected at most 1");
  }
  GRPO_TRY_STATUS(r.read_int("n_routed_experts", m.num_experts, 128, 1, kMaxExperts));
  GRPO_TRY_STATUS(read_top_k(r, "num_experts_per_tok", 8, m));
  GRPO_TRY_STATUS(r.read_int("moe_intermediate_size", m.moe_ffn_hidden_size, 1408, 1, kMaxDim));
  std::int64_t shared = 0;
  GRPO_TRY_STATUS(r.read_int("n_shared_experts", shared, 1, 0, 1 << 10));
  m.num_shared_experts = shared > 0 ? 1 : 0;
  m.shared_expert_ffn_hidden_size = shared * m.moe_ffn_hidden_size;
  GRPO_TRY_STATUS(read_first_dense(r, 1, m));
  GRPO_TRY_STATUS(r.read_bool("norm_topk_prob", m.norm_topk_prob, true));
  m.router_score_bias = true;
  GRPO_TRY_STATUS(r.read_int("num_nextn_predict_layers", m.mtp_layers, 0, 0, 64));
  m.mtp_stores_embeddings = true;
  return ok_status();
}

// gpt-oss (modeling_gpt_oss.py GptOssForCausalLM): GptOssAttention with biases on q, k, v and o
// (attention_bias, default true) and `sinks`, one learned logit per head; on every layer
// GptOssMLP: GptOssTopKRouter (weight [E, h] + bias [E]) over num_local_experts GptOssExperts,
// stored fused with biases (ModelSpec::expert_bias), softmax over the top-k. GptOssConfig's
// default rope is yarn.
Status read_gpt_oss(const ConfigReader& r, ModelSpec& m) {
  GRPO_TRY_STATUS(read_attention_bias(r, true, true, m));
  m.attention_sinks = true;
  GRPO_TRY_STATUS(r.read_int("num_local_experts", m.num_experts, 128, 1, kMaxExperts));
  std::int64_t top_k = 4;  // the released config.json files carry both names
  GRPO_TRY_STATUS(r.read_int("experts_per_token", top_k, 4, 1, kMaxExperts));
  GRPO_TRY_STATUS(read_top_k(r, "num_experts_per_tok", top_k, m));
  m.moe_ffn_hidden_size = m.ffn_hidden_size;
  m.router_bias = true;
  m.expert_bias = true;
  m.norm_topk_prob = true;
  m.first_k_dense_layers = 0;
  if (m.rope_scaling.empty() && r.is_null("rope_scaling") && r.is_null("rope_parameters")) {
    m.rope_scaling = "yarn";
  }
  return ok_status();
}

// Gemma2 and Gemma3's text model (modeling_gemma2.py Gemma2DecoderLayer, modeling_gemma3.py
// Gemma3DecoderLayer): four RMSNorms per layer (input, post_attention, pre_feedforward,
// post_feedforward; Gemma's 1 + w scaling has the same weights), a GeGLU MLP (the three SwiGLU
// projections), tied embeddings by default; Gemma3Attention adds q_norm and k_norm over head_dim.
// attention_bias puts a bias on q, k, v and o. Soft-capping (attn_logit_softcapping,
// final_logit_softcapping) and query_pre_attn_scalar have no weights.
Status read_gemma(const ConfigReader& r, Arch arch, ModelSpec& m) {
  m.norms_per_layer = 4;
  m.qk_norm = arch == Arch::kGemma3;
  return read_attention_bias(r, false, true, m);
}

// OLMoE and OLMo2 (modeling_olmoe.py OlmoeAttention, modeling_olmo2.py Olmo2Attention): q_norm
// and k_norm are RMSNorms over the whole q and k projections (heads x head_dim and kv_heads x
// head_dim); attention_bias puts a bias on q, k, v and o; clip_qkv has no weights. OLMo2's layer
// normalises the attention's and the MLP's outputs (post_attention_layernorm,
// post_feedforward_layernorm: two norms, as the pre-norm families). OLMoE's OlmoeSparseMoeBlock:
// num_experts experts of intermediate_size on every layer, a router without bias, no shared
// expert.
Status read_olmo(const ConfigReader& r, Arch arch, ModelSpec& m) {
  m.qk_norm = true;
  m.qk_norm_full_width = true;
  GRPO_TRY_STATUS(read_attention_bias(r, false, true, m));
  if (arch != Arch::kOlmoe) return ok_status();
  GRPO_TRY_STATUS(r.read_int("num_experts", m.num_experts, 64, 1, kMaxExperts));
  GRPO_TRY_STATUS(read_top_k(r, "num_experts_per_tok", 8, m));
  m.moe_ffn_hidden_size = m.ffn_hidden_size;
  m.first_k_dense_layers = 0;
  return r.read_bool("norm_topk_prob", m.norm_topk_prob, false);
}

}  // namespace grpo::core::hf_detail
