#include "grpo/trainer/sharding_plan.h"

#include <charconv>

namespace grpo::trainer {
namespace {

// The decoder layer a parameter name belongs to ("model.layers.12.mlp..." -> 12), or -1.
std::int64_t layer_index(const std::string& name) {
  static const std::string kLayers = "model.layers.";
  if (!name.starts_with(kLayers)) return -1;
  std::int64_t layer = -1;
  const char* first = name.data() + kLayers.size();
  const auto [end, ec] = std::from_chars(first, name.data() + name.size(), layer);
  return ec == std::errc() && end != first ? layer : -1;
}

// The stage of `name` among `stages`: the embedding the first, a decoder layer's the stage
// holding the layer, the final norm and the LM head (everything else) the last.
int stage_among(const std::vector<std::pair<std::int64_t, std::int64_t>>& stages,
                const std::string& name) {
  if (stages.size() <= 1) return 0;
  if (const std::int64_t layer = layer_index(name); layer >= 0) {
    for (std::size_t k = 0; k < stages.size(); ++k) {
      if (layer >= stages[k].first && layer < stages[k].second) return static_cast<int>(k);
    }
  }
  if (name.starts_with("model.embed_tokens.")) return 0;
  return static_cast<int>(stages.size()) - 1;
}

// Split at TP 2 without expert TP: the parameters sequence parallelism leaves whole are the rest.
bool sequence_partial_name(const core::ModelSpec& spec, const std::string& name) {
  if (expert_index(name) >= 0) return false;
  if (tp_slice(spec, name, 0, 2, false)) return false;
  return !name.ends_with("q_norm.weight") && !name.ends_with("k_norm.weight");
}

}  // namespace

std::vector<std::int64_t> Placement::own_shape() const {
  std::vector<std::int64_t> out = shape;
  if (own) out[static_cast<std::size_t>(own->dim)] = own->length;
  return out;
}

ShardingPlan::ShardingPlan(
    const core::ModelSpec& spec,
    const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& whole,
    const ShardLayout& l) {
  for (const auto& [name, shape] : whole) {
    Placement p;
    p.name = name;
    p.shape = shape;
    p.stage = stage_among(l.stages, name);
    const auto k = static_cast<std::size_t>(p.stage);
    if (!l.stage_owner.empty()) p.owner = l.stage_owner.at(k);
    p.expert = expert_index(name);
    if (p.expert >= 0 && !l.stage_expert_owners.empty()) {
      const std::vector<int>& members = l.stage_expert_owners.at(k);
      const std::int64_t per = spec.num_experts / static_cast<std::int64_t>(members.size());
      p.owner = members.at(static_cast<std::size_t>(p.expert / per));
    }
    for (int t = 0; t < l.tp_size; ++t) {
      if (auto s = tp_slice(spec, name, t, l.tp_size, l.expert_tp)) p.slices.push_back(*s);
    }
    if (p.sliced()) p.own = p.slices.at(static_cast<std::size_t>(l.tp_rank));
    p.sequence_partial = sequence_partial_name(spec, name);
    index_.emplace(name, params_.size());
    params_.push_back(std::move(p));
  }
}

std::vector<Placement> ShardingPlan::optimizer_states() const {
  std::vector<Placement> out;
  for (const char* prefix : {"exp_avg.", "exp_avg_sq."}) {
    for (const Placement& p : params_) {
      out.push_back(p);
      out.back().name = prefix + p.name;
    }
  }
  return out;
}

const Placement* ShardingPlan::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &params_[it->second];
}

int ShardingPlan::stage_of(const std::string& name) const {
  const Placement* p = find(name);
  return p != nullptr ? p->stage : 0;
}

std::optional<TpSlice> tp_slice(const core::ModelSpec& spec, const std::string& name, int rank,
                                int size, bool expert_tp) {
  if (size <= 1) return std::nullopt;
  const std::int64_t hd = spec.head_dim;
  const std::int64_t heads = spec.num_attention_heads / size;
  if (name.ends_with(".self_attn.q_proj.weight") || name.ends_with(".self_attn.q_proj.bias")) {
    return TpSlice{0, rank * heads * hd, heads * hd};
  }
  if (name.ends_with(".self_attn.o_proj.weight")) return TpSlice{1, rank * heads * hd, heads * hd};
  for (const char* kv_name : {".self_attn.k_proj.weight", ".self_attn.k_proj.bias",
                              ".self_attn.v_proj.weight", ".self_attn.v_proj.bias"}) {
    if (!name.ends_with(kv_name)) continue;
    const std::int64_t kv = spec.num_kv_heads;
    if (kv >= size) return TpSlice{0, rank * (kv / size) * hd, (kv / size) * hd};
    return TpSlice{0, (rank / (size / kv)) * hd, hd};
  }
  const std::int64_t ffn = spec.ffn_hidden_size / size;
  if (name.ends_with(".mlp.gate_proj.weight") || name.ends_with(".mlp.up_proj.weight")) {
    return TpSlice{0, rank * ffn, ffn};
  }
  if (name.ends_with(".mlp.down_proj.weight")) return TpSlice{1, rank * ffn, ffn};
  // The routed experts are split like a dense MLP with ETP = TP, else whole (ETP = 1).
  if (expert_tp && name.find(".mlp.experts.") != std::string::npos) {
    const std::int64_t moe = spec.moe_ffn_hidden_size / size;
    if (name.ends_with(".gate_proj.weight") || name.ends_with(".up_proj.weight")) {
      return TpSlice{0, rank * moe, moe};
    }
    if (name.ends_with(".down_proj.weight")) return TpSlice{1, rank * moe, moe};
  }
  // The shared expert is split like a dense MLP (Megatron-Core's SharedExpertMLP is column/row
  // parallel over TP).
  const std::int64_t shared = spec.num_shared_experts * spec.shared_expert_ffn_hidden_size / size;
  if (name.ends_with(".shared_expert.gate_proj.weight") ||
      name.ends_with(".shared_expert.up_proj.weight")) {
    return TpSlice{0, rank * shared, shared};
  }
  if (name.ends_with(".shared_expert.down_proj.weight")) return TpSlice{1, rank * shared, shared};
  if (name.ends_with("embed_tokens.weight") || name.ends_with("lm_head.weight")) {
    const std::int64_t v = spec.vocab_size / size;
    return TpSlice{0, rank * v, v};
  }
  return std::nullopt;
}

std::int64_t expert_index(const std::string& name) {
  static const std::string kMark = ".mlp.experts.";
  const auto at = name.find(kMark);
  if (at == std::string::npos) return -1;
  std::int64_t e = 0;
  const char* first = name.data() + at + kMark.size();
  const char* last = name.data() + name.size();
  const auto [end, ec] = std::from_chars(first, last, e);
  return ec == std::errc() && end != first ? e : -1;
}

}  // namespace grpo::trainer
