#include "grpo/core/hf_config.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace grpo::core {
namespace {

using nlohmann::json;

// The 1-based line and column of byte `offset` of `text`.
SourceLocation location_at(std::string_view text, std::string_view file, std::size_t offset) {
  SourceLocation loc{std::string(file), 1, 1};
  offset = std::min(offset, text.size());
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++loc.line;
      loc.column = 1;
    } else {
      ++loc.column;
    }
  }
  return loc;
}

// Reads config.json's keys with transformers' defaults; errors point at the key's first
// occurrence in the text (the file itself when the key is absent).
class ConfigReader {
 public:
  ConfigReader(const json& doc, std::string_view text, std::string_view file)
      : doc_(doc), text_(text), file_(file) {}

  SourceLocation where(std::string_view key) const {
    const std::string quoted = "\"" + std::string(key) + "\"";
    const std::size_t at = text_.find(quoted);
    if (at == std::string_view::npos) return SourceLocation{std::string(file_), 0, 0};
    return location_at(text_, file_, at);
  }
  Error fail(ErrorKind kind, std::string_view key, const std::string& why) const {
    return make_error(kind, std::string(key) + ": " + why, where(key));
  }
  // The value of `key`, or null when absent.
  const json* get(std::string_view key) const {
    const auto it = doc_.find(std::string(key));
    return it == doc_.end() ? nullptr : &*it;
  }
  bool is_null(std::string_view key) const {
    const json* v = get(key);
    return v == nullptr || v->is_null();
  }

  Status read_int(std::string_view key, std::int64_t& out, std::int64_t def, std::int64_t lo,
                  std::int64_t hi) const {
    const json* v = get(key);
    if (v == nullptr || v->is_null()) {
      out = def;
      return ok_status();
    }
    if (!v->is_number_integer()) return fail(ErrorKind::kWrongType, key, "expected an integer");
    if (v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(hi)) {
      return fail(ErrorKind::kInvalidValue, key,
                  "out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    const std::int64_t x = v->get<std::int64_t>();
    if (x < lo || x > hi) {
      return fail(ErrorKind::kInvalidValue, key,
                  std::to_string(x) + " is out of range [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "]");
    }
    out = x;
    return ok_status();
  }
  Status read_positive_double(std::string_view key, double& out, double def) const {
    const json* v = get(key);
    if (v == nullptr || v->is_null()) {
      out = def;
      return ok_status();
    }
    if (!v->is_number()) return fail(ErrorKind::kWrongType, key, "expected a number");
    const double x = v->get<double>();
    if (!std::isfinite(x) || x <= 0.0) {
      return fail(ErrorKind::kInvalidValue, key, "expected a positive number");
    }
    out = x;
    return ok_status();
  }
  Status read_bool(std::string_view key, bool& out, bool def) const {
    const json* v = get(key);
    if (v == nullptr || v->is_null()) {
      out = def;
      return ok_status();
    }
    if (!v->is_boolean()) return fail(ErrorKind::kWrongType, key, "expected true or false");
    out = v->get<bool>();
    return ok_status();
  }

 private:
  const json& doc_;
  std::string_view text_;
  std::string_view file_;
};

enum class Arch { kQwen2, kQwen3, kQwen3Moe, kLlama, kMistral, kMixtral };

struct ArchName {
  const char* name;
  Arch arch;
};
constexpr ArchName kArchitectures[] = {
    {"Qwen2ForCausalLM", Arch::kQwen2},       {"Qwen3ForCausalLM", Arch::kQwen3},
    {"Qwen3MoeForCausalLM", Arch::kQwen3Moe}, {"LlamaForCausalLM", Arch::kLlama},
    {"MistralForCausalLM", Arch::kMistral},   {"MixtralForCausalLM", Arch::kMixtral},
};

std::string supported_architectures() {
  std::string out;
  for (const auto& a : kArchitectures) out += (out.empty() ? "" : ", ") + std::string(a.name);
  return out;
}

// Upper bounds that keep every product of the counts far from overflow.
constexpr std::int64_t kMaxDim = std::int64_t{1} << 24;
constexpr std::int64_t kMaxVocab = std::int64_t{1} << 24;
constexpr std::int64_t kMaxLayers = 4096;
constexpr std::int64_t kMaxPositions = std::int64_t{1} << 30;

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
    if (type != "default") scaling = type;
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
// Qwen2/Qwen3 (configuration_qwen2.py): only when use_sliding_window is true, then on layers >=
// max_window_layers, or on those layer_types names "sliding_attention". Mistral and Mixtral
// (modeling_mistral.py MistralAttention): on every layer whenever sliding_window is set.
Status read_sliding_window(const ConfigReader& r, Arch arch, ModelSpec& m) {
  const bool qwen = arch == Arch::kQwen2 || arch == Arch::kQwen3 || arch == Arch::kQwen3Moe;
  bool use = !qwen;
  if (qwen) GRPO_TRY_STATUS(r.read_bool("use_sliding_window", use, false));
  std::int64_t window = 0;
  GRPO_TRY_STATUS(
      r.read_int("sliding_window", window, arch == Arch::kMistral ? 4096 : 0, 0, kMaxPositions));
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

// Qwen3-MoE's layer pattern: layer i is dense when it is in mlp_only_layers, else MoE when
// (i + 1) % decoder_sparse_step == 0 (Qwen3MoeDecoderLayer). ModelSpec expresses "the first k
// layers dense, the rest MoE", so the dense layers must be exactly a leading prefix.
Status read_moe(const ConfigReader& r, ModelSpec& m) {
  GRPO_TRY_STATUS(r.read_int("num_experts", m.num_experts, 128, 0, 1 << 16));
  GRPO_TRY_STATUS(r.read_int("num_experts_per_tok", m.experts_per_token, 8, 1,
                             std::max<std::int64_t>(1, m.num_experts)));
  if (m.num_experts > 0 && m.experts_per_token > m.num_experts) {
    // read_int checks only a value that is there: transformers' default top-k of 8 with fewer
    // experts would make torch.topk fail in the first forward (and the active count exceed the
    // total).
    return r.fail(ErrorKind::kInvalidValue, "num_experts_per_tok",
                  "the default of 8 is more than num_experts " + std::to_string(m.num_experts) +
                      ": give num_experts_per_tok");
  }
  GRPO_TRY_STATUS(r.read_int("moe_intermediate_size", m.moe_ffn_hidden_size, 768, 1, kMaxDim));
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

// transformers' defaults for keys config.json may leave out (configuration_<family>.py).
struct Defaults {
  std::int64_t hidden, layers, heads, kv_heads /* 0: as many as heads */, head_dim /* 0: derived */,
      ffn, vocab, positions;
  double rms_norm_eps, rope_theta;
};

const Defaults& defaults_of(Arch arch) {
  // Qwen2Config, Qwen3Config (head_dim 128), Qwen3MoeConfig, LlamaConfig, MistralConfig,
  // MixtralConfig, in the order of Arch.
  static const Defaults table[] = {
      {4096, 32, 32, 0, 0, 22016, 151936, 32768, 1e-6, 10000.0},
      {4096, 32, 32, 0, 128, 22016, 151936, 32768, 1e-6, 10000.0},
      {2048, 24, 32, 4, 0, 6144, 151936, 32768, 1e-6, 10000.0},
      {4096, 32, 32, 0, 0, 11008, 32000, 2048, 1e-6, 10000.0},
      {4096, 32, 32, 8, 0, 14336, 32000, 131072, 1e-6, 10000.0},
      {4096, 32, 32, 8, 0, 14336, 32000, 131072, 1e-5, 1e6},
  };
  return table[static_cast<int>(arch)];
}

// Biases and q/k norms per family: Qwen2Attention has q/k/v bias; Qwen3 has q/k RMSNorm and its
// attention_bias would put a bias on o_proj too (refused: ModelSpec has none there);
// LlamaAttention's attention_bias (q/k/v/o) and LlamaMLP's mlp_bias likewise; Mistral and
// Mixtral have neither.
Status read_attention(const ConfigReader& r, Arch arch, ModelSpec& m) {
  m.qkv_bias = arch == Arch::kQwen2;
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
  const ConfigReader r(doc, json_text, file_name);
  GRPO_TRY(const Arch arch, read_architecture(r));

  ModelSpec m;
  m.name = std::string(model_name);
  m.source = std::string(file_name);
  if (const json* id = r.get("_name_or_path"); id != nullptr && id->is_string()) {
    m.hf_id = id->get<std::string>();
  }
  if (const json* type = r.get("model_type"); type != nullptr && !type->is_null()) {
    if (!type->is_string()) return r.fail(ErrorKind::kWrongType, "model_type", "expected a string");
    m.model_type = type->get<std::string>();
  }
  if (const json* act = r.get("hidden_act"); act != nullptr && !act->is_null()) {
    if (!act->is_string() || act->get<std::string>() != "silu") {
      return r.fail(ErrorKind::kInvalidValue, "hidden_act", "only silu (SwiGLU) is supported");
    }
  }
  m.architecture = std::string(kArchitectures[static_cast<int>(arch)].name);
  const Defaults& d = defaults_of(arch);
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
  // head_dim: read with hidden_size / num_attention_heads as the fallback, except Qwen3Config's
  // default of 128.
  const std::int64_t derived_head_dim = m.hidden_size / m.num_attention_heads;
  GRPO_TRY_STATUS(r.read_int("head_dim", m.head_dim, d.head_dim > 0 ? d.head_dim : derived_head_dim,
                             2, 1 << 16));
  if (m.head_dim % 2 != 0 || m.head_dim < 2) {
    return r.fail(ErrorKind::kInvalidValue, "head_dim", "rotary embeddings need an even head_dim");
  }
  GRPO_TRY_STATUS(r.read_int("intermediate_size", m.ffn_hidden_size, d.ffn, 1, kMaxDim));
  GRPO_TRY_STATUS(r.read_int("vocab_size", m.vocab_size, d.vocab, 1, kMaxVocab));
  GRPO_TRY_STATUS(r.read_bool("tie_word_embeddings", m.tied_embeddings, false));
  GRPO_TRY_STATUS(r.read_positive_double("rope_theta", m.rope_theta, d.rope_theta));
  GRPO_TRY_STATUS(read_rope(r, m.rope_theta, m.rope_scaling));
  GRPO_TRY_STATUS(r.read_positive_double("rms_norm_eps", m.rms_norm_eps, d.rms_norm_eps));
  GRPO_TRY_STATUS(r.read_int("max_position_embeddings", m.max_position_embeddings, d.positions, 1,
                             kMaxPositions));
  GRPO_TRY_STATUS(read_sliding_window(r, arch, m));
  GRPO_TRY_STATUS(read_attention(r, arch, m));
  if (arch == Arch::kQwen3Moe) GRPO_TRY_STATUS(read_moe(r, m));
  if (arch == Arch::kMixtral) GRPO_TRY_STATUS(read_mixtral(r, m));
  GRPO_TRY_STATUS(check_model_size(m, file_name));
  return m;
}

}  // namespace grpo::core
