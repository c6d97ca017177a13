#include "grpo/core/hf_config.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "hf_config_reader.h"

namespace grpo::core {
namespace {

using hf_detail::Arch;
using hf_detail::ConfigReader;
using hf_detail::json;
using hf_detail::kMaxDim;
using hf_detail::kMaxExperts;
using hf_detail::kMaxLayers;
using hf_detail::kMaxPositions;
using hf_detail::kMaxVocab;
using hf_detail::location_at;

struct ArchName {
  const char* name;
  Arch arch;
};
// In the order of Arch.
constexpr ArchName kArchitectures[] = {
    {"Qwen2ForCausalLM", Arch::kQwen2},
    {"Qwen3ForCausalLM", Arch::kQwen3},
    {"Qwen3MoeForCausalLM", Arch::kQwen3Moe},
    {"LlamaForCausalLM", Arch::kLlama},
    {"MistralForCausalLM", Arch::kMistral},
    {"MixtralForCausalLM", Arch::kMixtral},
    {"Qwen2MoeForCausalLM", Arch::kQwen2Moe},
    {"DeepseekV2ForCausalLM", Arch::kDeepseekV2},
    {"DeepseekV3ForCausalLM", Arch::kDeepseekV3},
    {"Glm4MoeForCausalLM", Arch::kGlm4Moe},
    {"GptOssForCausalLM", Arch::kGptOss},
    {"Gemma2ForCausalLM", Arch::kGemma2},
    {"Gemma3ForCausalLM", Arch::kGemma3},
    {"Phi3ForCausalLM", Arch::kPhi3},
    {"OlmoeForCausalLM", Arch::kOlmoe},
    {"Olmo2ForCausalLM", Arch::kOlmo2},
    {"Qwen2_5_VLForConditionalGeneration", Arch::kQwen25Vl},
    {"Qwen3VLForConditionalGeneration", Arch::kQwen3Vl},
    {"Qwen3VLMoeForConditionalGeneration", Arch::kQwen3VlMoe},
    {"Gemma3ForConditionalGeneration", Arch::kGemma3Vl},
    {"DeepseekV32ForCausalLM", Arch::kDeepseekV32},
    {"MiMoForCausalLM", Arch::kMimo},
};

// The vision-language models' text decoders are Qwen2, Qwen3, Qwen3-MoE and Gemma3's
// (Qwen2_5_VLTextModel, Qwen3VLTextModel, Qwen3VLMoeTextModel, Gemma3TextModel): everything but
// the defaults and the vision tower is read as for those.
Arch text_arch_of(Arch arch) {
  switch (arch) {
    case Arch::kQwen25Vl:
      return Arch::kQwen2;
    case Arch::kQwen3Vl:
      return Arch::kQwen3;
    case Arch::kQwen3VlMoe:
      return Arch::kQwen3Moe;
    case Arch::kGemma3Vl:
      return Arch::kGemma3;
    default:
      return arch;
  }
}

// Architectures refused by name (a part of the class name), with what ModelSpec lacks for them:
// a count from the keys read would be silently wrong.
struct RefusedArch {
  const char* prefix;
  const char* why;
};
constexpr RefusedArch kRefused[] = {
    {"Qwen3Next", "hybrid linear attention (Gated DeltaNet layers beside gated full attention)"},
    {"Qwen3_5", "hybrid linear attention (Gated DeltaNet layers beside full attention)"},
    {"NemotronH", "hybrid Mamba-2 / attention / MLP layers (hybrid_override_pattern)"},
    {"DeciLM", "heterogeneous per-layer configs (block_configs: per-layer attention and FFN)"},
};

std::string supported_architectures() {
  std::string out;
  for (const auto& a : kArchitectures) out += (out.empty() ? "" : ", ") + std::string(a.name);
  return out;
}

Result<Arch> read_architecture(const ConfigReader& r) {
  const json* a = r.get("architectures");
  if (a == nullptr || a->is_null()) {
    return r.fail(ErrorKind::kInvalidValue, "architectures",
                  "missing: the model's class is needed (read: " + supported_architectures() + ")");
  }
  if (!a->is_array() || a->size() != 1 || !(*a)[0].is_string()) {
    return r.fail(ErrorKind::kWrongType, "architectures", "expected a list of one name");
  }
  const std::string name = (*a)[0].get<std::string>();
  for (const auto& k : kArchitectures) {
    if (name == k.name) return k.arch;
  }
  for (const auto& k : kRefused) {
    if (name.find(k.prefix) != std::string::npos) {
      return r.fail(ErrorKind::kInvalidValue, "architectures",
                    "'" + name + "' is not supported: " + k.why);
    }
  }
  return r.fail(
      ErrorKind::kInvalidValue, "architectures",
      "unsupported architecture '" + name + "' (supported: " + supported_architectures() + ")");
}

// rope_scaling (transformers 4.x) and rope_parameters (5.x): the scaling type is recorded (it
// changes no parameter count; embedded_trainer_supports refuses it), rope_theta read.
Status read_rope(const ConfigReader& r, double& theta, std::string& scaling) {
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    const json* v = r.get(key);
    if (v == nullptr || v->is_null()) continue;
    if (!v->is_object()) return r.fail(ErrorKind::kWrongType, key, "expected an object or null");
    std::string type = "default";
    for (const char* t : {"rope_type", "type"}) {
      const auto it = v->find(t);
      if (it != v->end() && it->is_string()) type = it->get<std::string>();
    }
    if (type != "default" && type != "mrope") scaling = type;  // Qwen2-VL's M-RoPE: plain RoPE
    if (const auto it = v->find("rope_theta"); it != v->end()) {
      if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() <= 0.0) {
        return r.fail(ErrorKind::kInvalidValue, key, "rope_theta: expected a positive number");
      }
      theta = it->get<double>();
    }
  }
  return ok_status();
}

// Sliding-window attention, recorded as the window and the number of layers using it.
// Qwen2/Qwen3/Qwen2-MoE (configuration_qwen2.py): only when use_sliding_window is true, then on
// layers >= max_window_layers, or on those layer_types names "sliding_attention". Mistral,
// Mixtral and Phi3 (MistralAttention, Phi3Attention): on every layer whenever sliding_window is
// set. Gemma2, Gemma3 and gpt-oss: on the layer_types named "sliding_attention", by default
// (Gemma2Config, GptOssConfig) every other layer from the first, (Gemma3TextConfig) all but every
// sliding_window_pattern-th. DeepSeek, GLM-4.5 and OLMo attend fully on every layer.
Status read_sliding_window(const ConfigReader& r, Arch arch, ModelSpec& m) {
  if (hf_detail::is_deepseek(arch) || arch == Arch::kGlm4Moe || arch == Arch::kOlmoe ||
      arch == Arch::kOlmo2) {
    return ok_status();
  }
  const bool qwen = arch == Arch::kQwen2 || arch == Arch::kMimo || arch == Arch::kQwen3 ||
                    arch == Arch::kQwen3Moe || arch == Arch::kQwen2Moe;
  const bool patterned = arch == Arch::kGemma2 || arch == Arch::kGemma3 || arch == Arch::kGptOss;
  bool use = !qwen;
  if (qwen) GRPO_TRY_STATUS(r.read_bool("use_sliding_window", use, false));
  const std::int64_t default_window = arch == Arch::kMistral  ? 4096
                                      : arch == Arch::kGptOss ? 128
                                      : patterned             ? 4096
                                                              : 0;
  std::int64_t window = 0;
  GRPO_TRY_STATUS(r.read_int("sliding_window", window, default_window, 0, kMaxPositions));
  if (const json* lt = r.get("layer_types"); lt != nullptr && !lt->is_null()) {
    if (!lt->is_array()) return r.fail(ErrorKind::kWrongType, "layer_types", "expected a list");
    std::int64_t sliding = 0;
    for (const json& t : *lt) {
      const std::string type = t.is_string() ? t.get<std::string>() : "";
      if (type == "sliding_attention") {
        ++sliding;
      } else if (type != "full_attention") {
        return r.fail(ErrorKind::kInvalidValue, "layer_types",
                      "only full_attention and sliding_attention layers are read");
      }
    }
    if (use && window > 0) {
      m.sliding_window = window;
      m.sliding_window_layers = sliding;
    }
    return ok_status();
  }
  if (patterned) {
    std::int64_t sliding = (m.num_layers + 1) / 2;
    if (arch == Arch::kGemma3) {
      std::int64_t pattern = 6;
      GRPO_TRY_STATUS(r.read_int("sliding_window_pattern", pattern, 6, 1, kMaxLayers));
      sliding = m.num_layers - m.num_layers / pattern;
    }
    if (window > 0) {
      m.sliding_window = window;
      m.sliding_window_layers = sliding;
    }
    return ok_status();
  }
  if (!use || window == 0) return ok_status();
  std::int64_t first = 0;
  if (qwen) GRPO_TRY_STATUS(r.read_int("max_window_layers", first, 28, 0, kMaxLayers));
  if (first >= m.num_layers) return ok_status();
  m.sliding_window = window;
  m.sliding_window_layers = m.num_layers - first;
  return ok_status();
}

// Mixtral's sparse block (modeling_mixtral.py MixtralSparseMoeBlock): num_local_experts SwiGLU
// experts of intermediate_size on every layer, a router without bias, softmax then top-k
// renormalized; no shared expert.
Status read_mixtral(const ConfigReader& r, ModelSpec& m) {
  GRPO_TRY_STATUS(r.read_int("num_local_experts", m.num_experts, 8, 1, 1 << 16));
  GRPO_TRY_STATUS(r.read_int("num_experts_per_tok", m.experts_per_token, 2, 1, m.num_experts));
  if (m.experts_per_token > m.num_experts) {  // the default top-k 2 with one expert
    return r.fail(ErrorKind::kInvalidValue, "num_experts_per_tok",
                  "the default of 2 is more than num_local_experts 1: give num_experts_per_tok");
  }
  m.moe_ffn_hidden_size = m.ffn_hidden_size;  // every layer is MoE: no dense FFN is built
  m.norm_topk_prob = true;
  m.first_k_dense_layers = 0;
  return ok_status();
}

// Qwen3MoeConfig's and Qwen2MoeConfig's MoE defaults.
struct MoeDefaults {
  std::int64_t experts, top_k, moe_ffn;
};

// Qwen3-MoE's and Qwen2-MoE's layer pattern: layer i is dense when it is in mlp_only_layers, else
// MoE when (i + 1) % decoder_sparse_step == 0 (Qwen3MoeDecoderLayer, Qwen2MoeDecoderLayer).
// ModelSpec expresses "the first k layers dense, the rest MoE", so the dense layers must be
// exactly a leading prefix.
Status read_moe(const ConfigReader& r, const MoeDefaults& d, ModelSpec& m) {
  GRPO_TRY_STATUS(r.read_int("num_experts", m.num_experts, d.experts, 0, kMaxExperts));
  GRPO_TRY_STATUS(r.read_int("num_experts_per_tok", m.experts_per_token, d.top_k, 1,
                             std::max<std::int64_t>(1, m.num_experts)));
  if (m.num_experts > 0 && m.experts_per_token > m.num_experts) {
    // read_int checks only a value that is there: transformers' default top-k of 8 with fewer
    // experts would make torch.topk fail in the first forward (and the active count exceed the
    // total).
    return r.fail(ErrorKind::kInvalidValue, "num_experts_per_tok",
                  "the default of " + std::to_string(d.top_k) + " is more than num_experts " +
                      std::to_string(m.num_experts) + ": give num_experts_per_tok");
  }
  GRPO_TRY_STATUS(
      r.read_int("moe_intermediate_size", m.moe_ffn_hidden_size, d.moe_ffn, 1, kMaxDim));
  GRPO_TRY_STATUS(r.read_bool("norm_topk_prob", m.norm_topk_prob, false));
  std::int64_t step = 1;
  GRPO_TRY_STATUS(r.read_int("decoder_sparse_step", step, 1, 1, kMaxLayers));
  if (step != 1) {
    return r.fail(ErrorKind::kInvalidValue, "decoder_sparse_step",
                  std::to_string(step) +
                      " is not supported (only 1: every layer outside mlp_only_layers is MoE)");
  }
  std::vector<std::int64_t> dense;
  if (const json* v = r.get("mlp_only_layers"); v != nullptr && !v->is_null()) {
    if (!v->is_array()) return r.fail(ErrorKind::kWrongType, "mlp_only_layers", "expected a list");
    for (const json& x : *v) {
      if (!x.is_number_integer() || x.get<std::int64_t>() < 0 ||
          x.get<std::int64_t>() >= m.num_layers) {
        return r.fail(ErrorKind::kInvalidValue, "mlp_only_layers",
                      "expected layer indices in [0, num_hidden_layers)");
      }
      dense.push_back(x.get<std::int64_t>());
    }
  }
  std::sort(dense.begin(), dense.end());
  dense.erase(std::unique(dense.begin(), dense.end()), dense.end());
  for (std::size_t i = 0; i < dense.size(); ++i) {
    if (dense[i] != static_cast<std::int64_t>(i)) {
      return r.fail(ErrorKind::kInvalidValue, "mlp_only_layers",
                    "only a leading run of dense layers (0, 1, ..., k-1) is supported; layer " +
                        std::to_string(dense[i]) + " is dense but layer " + std::to_string(i) +
                        " is not");
    }
  }
  m.first_k_dense_layers = static_cast<std::int64_t>(dense.size());
  if (m.num_experts == 0) {  // Qwen3MoeSparseMoeBlock needs experts; 0 would be a dense model
    return r.fail(ErrorKind::kInvalidValue, "num_experts",
                  "0 experts: use Qwen3ForCausalLM for a dense model");
  }
  return ok_status();
}

// Qwen2-MoE (modeling_qwen2_moe.py Qwen2MoeSparseMoeBlock): Qwen3-MoE's routed experts plus one
// shared expert of shared_expert_intermediate_size behind a sigmoid gate Linear(h, 1, no bias);
// Qwen2MoeAttention has Qwen2's q/k/v bias (qkv_bias, default true).
Status read_qwen2_moe(const ConfigReader& r, ModelSpec& m) {
  GRPO_TRY_STATUS(read_moe(r, MoeDefaults{60, 4, 1408}, m));
  std::int64_t shared = 0;
  GRPO_TRY_STATUS(r.read_int("shared_expert_intermediate_size", shared, 5632, 0, kMaxDim));
  m.num_shared_experts = shared > 0 ? 1 : 0;
  m.shared_expert_ffn_hidden_size = shared;
  m.shared_expert_gate = shared > 0;
  GRPO_TRY_STATUS(r.read_bool("qkv_bias", m.qkv_bias, true));
  return ok_status();
}

// transformers' defaults for keys config.json may leave out (configuration_<family>.py).
struct Defaults {
  std::int64_t hidden, layers, heads, kv_heads /* 0: as many as heads */, head_dim /* 0: derived */,
      ffn, vocab, positions;
  double rms_norm_eps, rope_theta;
  bool tied;
};

const Defaults& defaults_of(Arch arch) {
  // In the order of Arch: Qwen2Config, Qwen3Config (head_dim 128), Qwen3MoeConfig, LlamaConfig,
  // MistralConfig, MixtralConfig, Qwen2MoeConfig, DeepseekV2Config, DeepseekV3Config,
  // Glm4MoeConfig, GptOssConfig, Gemma2Config, Gemma3TextConfig, Phi3Config, OlmoeConfig,
  // Olmo2Config, Qwen2_5_VLTextConfig (= Qwen2VLTextConfig), Qwen3VLTextConfig,
  // Qwen3VLMoeTextConfig (= Qwen3MoeConfig), Gemma3TextConfig again, DeepseekV3Config's for
  // DeepSeek-V3.2 (its config.json is V3's with the index_* keys), Qwen2Config's for MiMo
  // (MiMoConfig derives from it). DeepSeek's head_dim is MLA's qk_nope + qk_rope (read_deepseek).
  static const Defaults table[] = {
      {4096, 32, 32, 0, 0, 22016, 151936, 32768, 1e-6, 10000.0, false},
      {4096, 32, 32, 0, 128, 22016, 151936, 32768, 1e-6, 10000.0, false},
      {2048, 24, 32, 4, 0, 6144, 151936, 32768, 1e-6, 10000.0, false},
      {4096, 32, 32, 0, 0, 11008, 32000, 2048, 1e-6, 10000.0, false},
      {4096, 32, 32, 8, 0, 14336, 32000, 131072, 1e-6, 10000.0, false},
      {4096, 32, 32, 8, 0, 14336, 32000, 131072, 1e-5, 1e6, false},
      {2048, 24, 16, 0, 0, 5632, 151936, 32768, 1e-6, 10000.0, false},
      {4096, 32, 32, 0, 0, 11008, 32000, 2048, 1e-6, 10000.0, false},
      {7168, 61, 128, 128, 0, 18432, 129280, 4096, 1e-6, 10000.0, false},
      {4096, 46, 96, 8, 128, 10944, 151552, 131072, 1e-5, 10000.0, false},
      {2880, 36, 64, 8, 64, 2880, 201088, 131072, 1e-5, 150000.0, false},
      {2304, 26, 8, 4, 256, 9216, 256000, 8192, 1e-6, 10000.0, true},
      {2304, 26, 8, 4, 256, 9216, 262208, 131072, 1e-6, 1e6, true},
      {3072, 32, 32, 0, 0, 8192, 32064, 4096, 1e-5, 10000.0, false},
      {2048, 16, 16, 0, 0, 2048, 50304, 4096, 1e-5, 10000.0, false},
      {4096, 32, 32, 0, 0, 11008, 50304, 2048, 1e-5, 10000.0, false},
      {8192, 80, 64, 8, 0, 29568, 152064, 32768, 1e-5, 1e6, false},
      {4096, 32, 32, 32, 128, 22016, 151936, 128000, 1e-6, 5e6, false},
      {2048, 24, 32, 4, 0, 6144, 151936, 32768, 1e-6, 10000.0, false},
      {2304, 26, 8, 4, 256, 9216, 262208, 131072, 1e-6, 1e6, true},
      {7168, 61, 128, 128, 0, 18432, 129280, 4096, 1e-6, 10000.0, false},
      {4096, 32, 32, 0, 0, 22016, 151936, 32768, 1e-6, 10000.0, false},
  };
  static_assert(std::size(table) == std::size(kArchitectures));
  return table[static_cast<int>(arch)];
}

// The MLP's activation: SiLU (SwiGLU) everywhere but Gemma's GeGLU (hidden_activation
// gelu_pytorch_tanh: the same three projections) and gpt-oss's clamped SwiGLU (GptOssExperts:
// its own activation whatever hidden_act says; the same weights).
Status read_activation(const ConfigReader& r, Arch arch) {
  if (arch == Arch::kGptOss) return ok_status();
  const bool gemma = arch == Arch::kGemma2 || arch == Arch::kGemma3;
  for (const char* key : {"hidden_act", "hidden_activation"}) {
    const json* act = r.get(key);
    if (act == nullptr || act->is_null()) continue;
    const std::string name = act->is_string() ? act->get<std::string>() : "";
    if (gemma && name != "gelu_pytorch_tanh" && name != "gelu") {
      return r.fail(ErrorKind::kInvalidValue, key,
                    "only gelu_pytorch_tanh (GeGLU) is supported for Gemma");
    }
    if (!gemma && name != "silu") {
      return r.fail(ErrorKind::kInvalidValue, key, "only silu (SwiGLU) is supported");
    }
  }
  return ok_status();
}

// The family's own keys, after the common ones.
Status read_family(const ConfigReader& r, Arch arch, ModelSpec& m) {
  switch (arch) {
    case Arch::kQwen3Moe:
      return read_moe(r, MoeDefaults{128, 8, 768}, m);
    case Arch::kMixtral:
      return read_mixtral(r, m);
    case Arch::kQwen2Moe:
      return read_qwen2_moe(r, m);
    case Arch::kDeepseekV2:
    case Arch::kDeepseekV3:
    case Arch::kDeepseekV32:
      return hf_detail::read_deepseek(r, arch, m);
    case Arch::kGlm4Moe:
      return hf_detail::read_glm4_moe(r, m);
    case Arch::kGptOss:
      return hf_detail::read_gpt_oss(r, m);
    case Arch::kGemma2:
    case Arch::kGemma3:
      return hf_detail::read_gemma(r, arch, m);
    case Arch::kOlmoe:
    case Arch::kOlmo2:
      return hf_detail::read_olmo(r, arch, m);
    case Arch::kMimo:
      // MiMo (XiaomiMiMo modeling_mimo.py MiMoForCausalLM): Qwen2's decoder plus
      // num_nextn_predict_layers MiMoMTPLayers, each a Qwen2 attention and MLP with
      // token_layernorm, hidden_layernorm, input_proj (2h -> h, no bias) and final_layernorm,
      // sharing the model's embeddings and head (none stored of its own).
      return r.read_int("num_nextn_predict_layers", m.mtp_layers, 0, 0, 64);
    default:
      return ok_status();
  }
}

// Biases and q/k norms per family: Qwen2Attention (MiMo's too) has q/k/v bias; Qwen3 has q/k
// RMSNorm and its attention_bias would put a bias on o_proj too (refused: ModelSpec has none
// there); LlamaAttention's attention_bias (q/k/v/o) and LlamaMLP's mlp_bias likewise; Mistral and
// Mixtral have neither.
Status read_attention(const ConfigReader& r, Arch arch, ModelSpec& m) {
  m.qkv_bias = arch == Arch::kQwen2 || arch == Arch::kMimo;
  m.qk_norm = arch == Arch::kQwen3 || arch == Arch::kQwen3Moe;
  const bool qwen3 = m.qk_norm;
  if (qwen3 || arch == Arch::kLlama) {
    bool bias = false;
    GRPO_TRY_STATUS(r.read_bool("attention_bias", bias, false));
    if (bias) {
      return r.fail(ErrorKind::kInvalidValue, "attention_bias",
                    "true is not supported (a bias on o_proj)");
    }
  }
  if (arch == Arch::kLlama) {
    bool bias = false;
    GRPO_TRY_STATUS(r.read_bool("mlp_bias", bias, false));
    if (bias) {
      return r.fail(ErrorKind::kInvalidValue, "mlp_bias",
                    "true is not supported (biases on the MLP projections)");
    }
  }
  return ok_status();
}

}  // namespace

Result<ModelSpec> model_from_hf_config(std::string_view json_text, std::string_view file_name,
                                       std::string_view model_name) {
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::parse_error& e) {
    std::string why = e.what();
    if (const auto colon = why.rfind(": "); colon != std::string::npos) why = why.substr(colon + 2);
    const std::size_t at = e.byte > 0 ? e.byte - 1 : 0;
    return make_error(ErrorKind::kParse, "not valid JSON: " + why,
                      location_at(json_text, file_name, at));
  } catch (const json::exception& e) {  // out_of_range: a number too large for any type
    std::string why = e.what();
    if (const auto colon = why.rfind(": "); colon != std::string::npos) why = why.substr(colon + 2);
    return make_error(ErrorKind::kParse, "not valid JSON: " + why, {std::string(file_name), 0, 0});
  }
  if (!doc.is_object()) {
    return make_error(ErrorKind::kParse, "expected a JSON object", {std::string(file_name), 1, 1});
  }
  const ConfigReader top(doc, json_text, file_name);
  GRPO_TRY(const Arch named, read_architecture(top));
  // A vision-language model's text keys are at the top level or in text_config.
  const Arch arch = text_arch_of(named);
  const bool vision_language = arch != named;
  const ConfigReader r =
      vision_language && top.has_object("text_config") ? top.nested("text_config") : top;

  ModelSpec m;
  m.name = std::string(model_name);
  m.source = std::string(file_name);
  if (const json* id = top.get("_name_or_path"); id != nullptr && id->is_string()) {
    m.hf_id = id->get<std::string>();
  }
  // The top level's model_type (a VL model's, not its text_config's): bridges look it up.
  if (const json* type = top.get("model_type"); type != nullptr && !type->is_null()) {
    if (!type->is_string()) {
      return top.fail(ErrorKind::kWrongType, "model_type", "expected a string");
    }
    m.model_type = type->get<std::string>();
  }
  GRPO_TRY_STATUS(read_activation(r, arch));
  m.architecture = std::string(kArchitectures[static_cast<int>(named)].name);
  const Defaults& d = defaults_of(named);
  GRPO_TRY_STATUS(r.read_int("hidden_size", m.hidden_size, d.hidden, 1, kMaxDim));
  GRPO_TRY_STATUS(r.read_int("num_hidden_layers", m.num_layers, d.layers, 1, kMaxLayers));
  GRPO_TRY_STATUS(r.read_int("num_attention_heads", m.num_attention_heads, d.heads, 1, 1 << 16));
  GRPO_TRY_STATUS(r.read_int("num_key_value_heads", m.num_kv_heads,
                             d.kv_heads > 0 ? d.kv_heads : m.num_attention_heads, 1,
                             m.num_attention_heads));
  if (m.num_attention_heads % m.num_kv_heads != 0) {
    return r.fail(ErrorKind::kInvalidValue, "num_key_value_heads",
                  "num_attention_heads " + std::to_string(m.num_attention_heads) +
                      " is not a multiple of it");
  }
  // head_dim: read with hidden_size / num_attention_heads as the fallback, except the defaults of
  // Qwen3Config (128), Glm4MoeConfig (128), GptOssConfig (64) and Gemma (256). DeepSeek's MLA
  // has no single head_dim (DeepseekV3Config's head_dim is the rope part): read_deepseek sets it.
  const bool mla = hf_detail::is_deepseek(arch);
  const std::int64_t derived_head_dim = m.hidden_size / m.num_attention_heads;
  if (!mla) {
    GRPO_TRY_STATUS(r.read_int("head_dim", m.head_dim,
                               d.head_dim > 0 ? d.head_dim : derived_head_dim, 2, 1 << 16));
    if (m.head_dim % 2 != 0 || m.head_dim < 2) {
      return r.fail(ErrorKind::kInvalidValue, "head_dim",
                    "rotary embeddings need an even head_dim");
    }
  }
  GRPO_TRY_STATUS(r.read_int("intermediate_size", m.ffn_hidden_size, d.ffn, 1, kMaxDim));
  GRPO_TRY_STATUS(r.read_int("vocab_size", m.vocab_size, d.vocab, 1, kMaxVocab));
  // Qwen3-VL keeps tie_word_embeddings at the top level (Qwen3VLConfig), beside text_config.
  GRPO_TRY_STATUS((top.is_null("tie_word_embeddings") ? r : top)
                      .read_bool("tie_word_embeddings", m.tied_embeddings, d.tied));
  GRPO_TRY_STATUS(r.read_positive_double("rope_theta", m.rope_theta, d.rope_theta));
  GRPO_TRY_STATUS(read_rope(r, m.rope_theta, m.rope_scaling));
  GRPO_TRY_STATUS(r.read_positive_double("rms_norm_eps", m.rms_norm_eps, d.rms_norm_eps));
  GRPO_TRY_STATUS(r.read_int("max_position_embeddings", m.max_position_embeddings, d.positions, 1,
                             kMaxPositions));
  GRPO_TRY_STATUS(read_sliding_window(r, arch, m));
  GRPO_TRY_STATUS(read_attention(r, arch, m));
  GRPO_TRY_STATUS(read_family(r, arch, m));
  if (vision_language) {
    static const json kNone = json::object();  // no vision_config: the class's defaults
    const ConfigReader v = top.has_object("vision_config")
                               ? top.nested("vision_config")
                               : ConfigReader(kNone, json_text, file_name);
    GRPO_TRY_STATUS(named == Arch::kQwen25Vl   ? hf_detail::read_qwen25_vision(v, m)
                    : named == Arch::kGemma3Vl ? hf_detail::read_gemma3_vision(v, m)
                                               : hf_detail::read_qwen3_vision(v, m));
  }
  GRPO_TRY_STATUS(check_model_size(m, file_name));
  return m;
}

}  // namespace grpo::core
