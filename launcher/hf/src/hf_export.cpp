#include "grpo/hf/hf_export.h"
#include "grpo/core/json_text.h"
#include "grpo/core/text.h"

#include <cctype>
#include <cstdio>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

namespace grpo::core {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

void add(std::vector<HfParameter>& out, std::string name, std::vector<std::int64_t> shape) {
  out.push_back({std::move(name), std::move(shape), {}});
}

void add_swiglu(std::vector<HfParameter>& out, const std::string& prefix, std::int64_t hidden,
                std::int64_t ffn) {
  add(out, prefix + "gate_proj.weight", {ffn, hidden});
  add(out, prefix + "up_proj.weight", {ffn, hidden});
  add(out, prefix + "down_proj.weight", {hidden, ffn});
}

}  // namespace

std::string hf_tensor_name(const ModelSpec& spec, std::string_view name) {
  std::string out(name);
  if (spec.architecture != "MixtralForCausalLM" || !name.starts_with("model.layers.")) return out;
  const std::size_t mlp = out.find(".mlp.");
  if (mlp == std::string::npos) return out;
  out.replace(mlp, 5, ".block_sparse_moe.");
  // ...experts.E.gate_proj.weight -> ...experts.E.w1.weight (up -> w3, down -> w2)
  constexpr std::pair<std::string_view, std::string_view> kExpert[] = {
      {".gate_proj.", ".w1."}, {".up_proj.", ".w3."}, {".down_proj.", ".w2."}};
  if (out.find(".experts.") == std::string::npos) return out;
  for (const auto& [ours, theirs] : kExpert) {
    if (const std::size_t at = out.rfind(ours); at != std::string::npos) {
      out.replace(at, ours.size(), theirs);
      break;
    }
  }
  return out;
}

std::vector<HfParameter> hf_parameters(const ModelSpec& s) {
  std::vector<HfParameter> out;
  const std::int64_t h = s.hidden_size;
  add(out, "model.embed_tokens.weight", {s.vocab_size, h});
  for (std::int64_t i = 0; i < s.num_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    // Qwen2Attention / Qwen3Attention register q, k, v, o, then (Qwen3) q_norm, k_norm.
    add(out, p + "self_attn.q_proj.weight", {s.q_width(), h});
    if (s.qkv_bias) add(out, p + "self_attn.q_proj.bias", {s.q_width()});
    add(out, p + "self_attn.k_proj.weight", {s.kv_width(), h});
    if (s.qkv_bias) add(out, p + "self_attn.k_proj.bias", {s.kv_width()});
    add(out, p + "self_attn.v_proj.weight", {s.kv_width(), h});
    if (s.qkv_bias) add(out, p + "self_attn.v_proj.bias", {s.kv_width()});
    add(out, p + "self_attn.o_proj.weight", {h, s.q_width()});
    if (s.qk_norm) {
      add(out, p + "self_attn.q_norm.weight", {s.head_dim});
      add(out, p + "self_attn.k_norm.weight", {s.head_dim});
    }
    if (s.is_moe() && i >= s.first_k_dense_layers) {
      // Qwen3MoeSparseMoeBlock / Qwen2MoeSparseMoeBlock: gate, experts, shared expert, its gate.
      add(out, p + "mlp.gate.weight", {s.num_experts, h});
      for (std::int64_t e = 0; e < s.num_experts; ++e) {
        add_swiglu(out, p + "mlp.experts." + std::to_string(e) + ".", h, s.moe_ffn_hidden_size);
      }
      if (s.num_shared_experts > 0) {
        add_swiglu(out, p + "mlp.shared_expert.", h,
                   s.num_shared_experts * s.shared_expert_ffn_hidden_size);
        if (s.shared_expert_gate) add(out, p + "mlp.shared_expert_gate.weight", {1, h});
      }
    } else {
      add_swiglu(out, p + "mlp.", h, s.ffn_hidden_size);
    }
    add(out, p + "input_layernorm.weight", {h});
    add(out, p + "post_attention_layernorm.weight", {h});
  }
  add(out, "model.norm.weight", {h});
  if (!s.tied_embeddings) add(out, "lm_head.weight", {s.vocab_size, h});
  for (HfParameter& p : out) p.published = hf_tensor_name(s, p.name);
  return out;
}

HfArchitecture hf_architecture(const ModelSpec& s) {
  HfArchitecture a;
  // Classes whose modules grpo-trainer builds exactly (embedded_trainer_supports), kept as named.
  if (const TrainedClass* kept = embedded_trainer_class(s.architecture)) {
    return {std::string(kept->architecture), std::string(kept->model_type), ""};
  }
  if (s.is_moe() && s.num_shared_experts > 0) {
    a = {"Qwen2MoeForCausalLM", "qwen2_moe", ""};
    if (s.qk_norm) a.caveat = "q/k norms";
    if (!s.qkv_bias) a.caveat += std::string(a.caveat.empty() ? "" : ", ") + "no q/k/v bias";
    if (!s.shared_expert_gate) {
      a.caveat += std::string(a.caveat.empty() ? "" : ", ") + "no shared-expert gate";
    }
  } else if (s.is_moe()) {
    a = {"Qwen3MoeForCausalLM", "qwen3_moe", ""};
    if (s.qkv_bias) a.caveat = "q/k/v bias";
    if (!s.qk_norm) a.caveat += std::string(a.caveat.empty() ? "" : ", ") + "no q/k norms";
  } else if (s.qkv_bias) {
    a = {"Qwen2ForCausalLM", "qwen2", ""};
    if (s.qk_norm) a.caveat = "q/k norms";
  } else {
    a = {"Qwen3ForCausalLM", "qwen3", ""};
    if (!s.qk_norm) a.caveat = "no q/k norms";
  }
  if (!a.caveat.empty()) {
    a.caveat = a.architecture + " in transformers cannot hold this model exactly (" + a.caveat +
               "): transformers would not load it as it was trained";
  }
  return a;
}

std::string_view torch_dtype_name(TensorDtype dtype) {
  switch (dtype) {
    case TensorDtype::kF32:
      return "float32";
    case TensorDtype::kF16:
      return "float16";
    case TensorDtype::kBF16:
      return "bfloat16";
    case TensorDtype::kF64:
      return "float64";
    case TensorDtype::kI64:
      return "int64";
    case TensorDtype::kI32:
      return "int32";
    case TensorDtype::kU8:
      return "uint8";
    case TensorDtype::kBool:
      return "bool";
  }
  return "float32";
}

Result<TensorDtype> parse_export_dtype(std::string_view text) {
  const std::string t = ascii_lower(text);
  if (t == "bf16" || t == "bfloat16") return TensorDtype::kBF16;
  if (t == "fp16" || t == "float16") return TensorDtype::kF16;
  if (t == "fp32" || t == "float32") return TensorDtype::kF32;
  return make_error(ErrorKind::kInvalidValue,
                    "--dtype: '" + std::string(text) + "' is not one of bf16, fp16, fp32");
}

std::string hf_config_from_spec(const ModelSpec& s, TensorDtype dtype) {
  const HfArchitecture arch = hf_architecture(s);
  json c = json::object();  // std::map: keys sorted, as transformers' to_json_string sorts them
  c["architectures"] = json::array({arch.architecture});
  c["model_type"] = arch.model_type;
  c["attention_dropout"] = 0.0;
  c["hidden_act"] = "silu";
  c["hidden_size"] = s.hidden_size;
  c["head_dim"] = s.head_dim;
  c["initializer_range"] = 0.02;
  c["intermediate_size"] = s.ffn_hidden_size;
  c["max_position_embeddings"] = s.max_position_embeddings;
  c["max_window_layers"] = s.num_layers;
  c["num_attention_heads"] = s.num_attention_heads;
  c["num_hidden_layers"] = s.num_layers;
  c["num_key_value_heads"] = s.num_kv_heads;
  c["rms_norm_eps"] = s.rms_norm_eps;
  c["rope_scaling"] = nullptr;
  c["rope_theta"] = s.rope_theta;
  c["sliding_window"] = nullptr;
  c["tie_word_embeddings"] = s.tied_embeddings;
  c["torch_dtype"] = std::string(torch_dtype_name(dtype));
  c["use_cache"] = true;
  c["use_sliding_window"] = false;
  c["vocab_size"] = s.vocab_size;
  if (arch.model_type == "qwen3" || arch.model_type == "qwen3_moe") {
    c["attention_bias"] = s.qkv_bias;
  } else if (arch.model_type == "qwen2_moe") {
    c["qkv_bias"] = s.qkv_bias;  // not a Qwen2MoeConfig key: says what the tensors hold
  }
  if (s.qk_norm && (arch.model_type == "qwen2" || arch.model_type == "qwen2_moe")) {
    c["qk_norm"] = true;  // likewise: the q_norm / k_norm tensors are in the files
  }
  if (s.is_moe()) {
    c["decoder_sparse_step"] = 1;
    json dense = json::array();
    for (std::int64_t i = 0; i < s.first_k_dense_layers; ++i) dense.push_back(i);
    c["mlp_only_layers"] = dense;
    c["moe_intermediate_size"] = s.moe_ffn_hidden_size;
    c["norm_topk_prob"] = s.norm_topk_prob;
    c["num_experts"] = s.num_experts;
    c["num_experts_per_tok"] = s.experts_per_token;
    c["output_router_logits"] = false;
    c["router_aux_loss_coef"] = 0.001;
    if (s.num_shared_experts > 0) {
      c["shared_expert_intermediate_size"] = s.num_shared_experts * s.shared_expert_ffn_hidden_size;
    }
  }
  return json_text(c, 2) + "\n";
}

Result<std::string> hf_config_with_dtype(std::string_view json_text, std::string_view file_name,
                                         TensorDtype dtype) {
  ordered_json doc;
  try {
    doc = ordered_json::parse(json_text);
  } catch (const json::exception& e) {
    return make_error(ErrorKind::kParse, std::string("not valid JSON: ") + e.what(),
                      {std::string(file_name), 0, 0});
  }
  if (!doc.is_object()) {
    return make_error(ErrorKind::kParse, "expected a JSON object", {std::string(file_name), 1, 1});
  }
  doc["torch_dtype"] = std::string(torch_dtype_name(dtype));
  if (doc.contains("dtype")) doc["dtype"] = std::string(torch_dtype_name(dtype));
  return core::json_text(doc, 2) + "\n";
}

std::string hf_generation_config() {
  return json_text(json{{"_from_model_config", true}}, 2) + "\n";
}

Result<std::uint64_t> parse_shard_size(std::string_view text) {
  const auto bad = [&](const std::string& why) {
    return make_error(ErrorKind::kInvalidValue,
                      "--max-shard-size: '" + std::string(text) + "' " + why +
                          " (bytes, or a number with KB, MB, GB, TB, KiB, MiB, GiB, TiB)");
  };
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0) return bad("is not a size");
  const std::string unit = ascii_lower(text.substr(digits));
  std::uint64_t mult = 1;
  if (unit.empty()) {
    mult = 1;
  } else if (unit == "kb") {
    mult = 1000;
  } else if (unit == "mb") {
    mult = 1000'000;
  } else if (unit == "gb") {
    mult = 1000'000'000;
  } else if (unit == "tb") {
    mult = 1000'000'000'000;
  } else if (unit == "kib") {
    mult = std::uint64_t{1} << 10;
  } else if (unit == "mib") {
    mult = std::uint64_t{1} << 20;
  } else if (unit == "gib") {
    mult = std::uint64_t{1} << 30;
  } else if (unit == "tib") {
    mult = std::uint64_t{1} << 40;
  } else {
    return bad("has an unknown unit");
  }
  std::uint64_t n = 0;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  for (std::size_t i = 0; i < digits; ++i) {
    const auto d = static_cast<std::uint64_t>(text[i] - '0');
    if (n > (kMax - d) / 10) return bad("is too large");
    n = n * 10 + d;
  }
  if (n > kMax / mult) return bad("is too large");
  if (n == 0) return bad("must be at least 1 byte");
  return n * mult;
}

ShardPlan plan_shards(const std::vector<ShardTensor>& tensors, std::uint64_t max_shard_size) {
  ShardPlan plan;
  std::vector<std::size_t> current;
  std::uint64_t current_size = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::uint64_t size = tensors[i].bytes;
    plan.total_size += size;
    if (size > max_shard_size) {  // its own shard; the current one stays open
      plan.members.push_back({i});
      continue;
    }
    if (current_size + size > max_shard_size) {
      plan.members.push_back(std::move(current));
      current.clear();
      current_size = 0;
    }
    current.push_back(i);
    current_size += size;
  }
  if (!current.empty() || plan.members.empty()) plan.members.push_back(std::move(current));
  const std::size_t n = plan.members.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (n == 1) {
      plan.files.push_back("model.safetensors");
    } else {
      char buf[64];
      std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", i + 1, n);
      plan.files.push_back(buf);
    }
  }
  return plan;
}

std::string shard_index_json(const ShardPlan& plan, const std::vector<ShardTensor>& tensors) {
  json weight_map = json::object();
  for (std::size_t f = 0; f < plan.files.size(); ++f) {
    for (std::size_t i : plan.members[f]) weight_map[tensors[i].name] = plan.files[f];
  }
  json index = {{"metadata", {{"total_size", plan.total_size}}}, {"weight_map", weight_map}};
  return json_text(index, 2) + "\n";
}

std::string safetensors_header_bytes(const std::vector<SafetensorsEntry>& entries) {
  ordered_json h = ordered_json::object();
  h["__metadata__"] = {{"format", "pt"}};
  for (const auto& e : entries) {
    ordered_json entry = ordered_json::object();
    entry["dtype"] = std::string(to_string(e.dtype));
    entry["shape"] = e.shape;
    entry["data_offsets"] = {e.begin, e.end};
    h[e.name] = std::move(entry);
  }
  std::string text = json_text(h);
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  std::uint64_t n = text.size();
  for (int i = 0; i < 8; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + text;
}

std::uint16_t fp32_to_bf16(std::uint32_t x) {
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN
  // Round to nearest even on the 16 dropped bits: add 0x7fff plus the lowest kept bit.
  const std::uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(rounded >> 16);
}

std::uint16_t fp32_to_fp16(std::uint32_t x) {
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00;   // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00;  // >= 65520 (halfway to 2^16) or inf: inf
  if (a >= 0x38800000u) {                      // a normal half: rebias the exponent 127 -> 15
    std::uint32_t h = (a - 0x38000000u) >> 13;
    const std::uint32_t rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry moves up the exponent
    return static_cast<std::uint16_t>(sign | h);
  }
  if (a <= 0x33000000u) return sign;  // <= 2^-25, half the smallest subnormal: zero (even)
  // A subnormal half: units of 2^-24. value = m * 2^(e - 150), so h = m >> (126 - e).
  const std::uint32_t e = a >> 23;
  const std::uint32_t m = (a & 0x7fffffu) | 0x800000u;
  const std::uint32_t shift = 126 - e;  // 14 .. 24
  std::uint32_t h = m >> shift;
  const std::uint32_t rest = m & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

}  // namespace grpo::core
