#include "grpo/core/layout.h"

#include <algorithm>
#include <charconv>

namespace grpo::core {
namespace {

std::string num(std::int64_t v) {
  return std::to_string(v);
}

Result<int> parse_int(std::string_view key, std::string_view value) {
  int out = 0;
  const auto* end = value.data() + value.size();
  const auto [p, ec] = std::from_chars(value.data(), end, out);
  if (ec != std::errc{} || p != end || out < 0) {
    return make_error(ErrorKind::kInvalidValue, "--set " + std::string(key) + "=" +
                                                    std::string(value) +
                                                    ": expected a non-negative integer");
  }
  return out;
}

Result<bool> parse_bool(std::string_view key, std::string_view value) {
  if (value == "true" || value == "True" || value == "1" || value == "on") return true;
  if (value == "false" || value == "False" || value == "0" || value == "off") return false;
  return make_error(ErrorKind::kInvalidValue, "--set " + std::string(key) + "=" +
                                                  std::string(value) + ": expected true or false");
}

}  // namespace

std::string_view to_string(Recompute r) {
  return r == Recompute::kFull ? "full" : "none";
}

std::string to_string(const Offload& o) {
  std::string s;
  if (o.params) s += "params";
  if (o.grads) s += std::string(s.empty() ? "" : "+") + "grads";
  if (o.optimizer) s += std::string(s.empty() ? "" : "+") + "optimizer";
  if (o.cpu_optimizer) s += std::string(s.empty() ? "" : "+") + "cpu-optimizer";
  return s.empty() ? "none" : s;
}

std::optional<std::pair<int, int>> uneven_split(int num_layers, int pp) {
  if (pp <= 1 || num_layers % pp == 0) return std::pair{0, 0};
  // Middle stages get ceil(L / pp) layers; the first and last share the rest, which is smaller
  // because both ends carry extra work (embedding; LM head and loss). An odd layer goes to the
  // last stage. Splits whose first or last stage would be empty are refused (the 1.5 x L / pp
  // bound below is a guard; ceil(L / pp) already is the smallest possible largest stage).
  const int middle = (num_layers + pp - 1) / pp;
  const int rest = pp == 2 ? num_layers : num_layers - (pp - 2) * middle;
  const int first = rest / 2;
  const int last = rest - first;
  if (first < 1 || last < 1) return std::nullopt;
  const int largest = std::max({first, last, pp > 2 ? middle : 0});
  if (2 * largest * pp > 3 * num_layers) return std::nullopt;
  return std::pair{first, last};
}

namespace {

// Megatron-Core (transformer_block.py): with only the first (or last) stage's count given, the
// remaining layers spread evenly over all other stages; with both, over the middle stages.
struct StageSplit {
  bool ok = true;
  int first = 0;
  int middle = 0;
  int last = 0;
};

StageSplit split_stages(int layers, int pp, int first_given, int last_given,
                        bool count_embedding = false, bool count_loss = false) {
  StageSplit s;
  if (pp <= 1) {
    s.first = s.last = s.middle = layers;
    return s;
  }
  if (first_given == 0 && last_given == 0 && (count_embedding || count_loss)) {
    // account_for_{embedding,loss}_in_pipeline_split: the embedding and the loss each count as
    // one layer of the first / last stage; the total must then divide evenly.
    const int total = layers + (count_embedding ? 1 : 0) + (count_loss ? 1 : 0);
    s.ok = total % pp == 0;
    const int per = total / pp;
    s.middle = per;
    s.first = per - (count_embedding ? 1 : 0);
    s.last = per - (count_loss ? 1 : 0);
    s.ok = s.ok && s.first >= 1 && s.last >= 1;
    return s;
  }
  if (first_given > 0 && last_given > 0) {
    const int rest = layers - first_given - last_given;
    s.first = first_given;
    s.last = last_given;
    if (pp == 2) {
      s.ok = rest == 0;
    } else {
      s.ok = rest > 0 && rest % (pp - 2) == 0;
      s.middle = s.ok ? rest / (pp - 2) : 0;
    }
    return s;
  }
  if (first_given > 0 || last_given > 0) {
    const int given = first_given > 0 ? first_given : last_given;
    const int rest = layers - given;
    s.ok = rest > 0 && rest % (pp - 1) == 0;
    const int other = s.ok ? rest / (pp - 1) : 0;
    s.first = first_given > 0 ? given : other;
    s.last = last_given > 0 ? given : other;
    s.middle = other;
    return s;
  }
  s.ok = layers % pp == 0;
  s.first = s.middle = s.last = layers / pp;
  return s;
}

}  // namespace

std::vector<int> stage_layers(const ModelSpec& model, const Layout& layout) {
  const int pp = layout.dims.pp;
  const int layers = static_cast<int>(model.num_layers);
  if (pp <= 1) return {layers};
  const StageSplit s = split_stages(layers, pp, layout.first_stage_layers, layout.last_stage_layers,
                                    layout.split_counts_embedding, layout.split_counts_loss);
  std::vector<int> out(static_cast<std::size_t>(pp), s.middle);
  out.front() = s.first;
  out.back() = s.last;
  return out;
}

bool LayoutConstraints::any() const {
  return tp || pp || cp || dp || ep || etp || micro_batch || rollout_tp || ref_tp ||
         first_stage_layers || last_stage_layers || param_offload || grad_offload ||
         optimizer_offload || cpu_optimizer || sequence_parallel || distributed_optimizer ||
         recompute;
}

const std::vector<std::string>& layout_keys() {
  static const std::vector<std::string> keys = {"tp",
                                                "pp",
                                                "cp",
                                                "dp",
                                                "ep",
                                                "etp",
                                                "micro_batch",
                                                "rollout_tp",
                                                "ref_tp",
                                                "first_stage_layers",
                                                "last_stage_layers",
                                                "param_offload",
                                                "grad_offload",
                                                "optimizer_offload",
                                                "cpu_optimizer",
                                                "sequence_parallel",
                                                "distributed_optimizer",
                                                "recompute"};
  return keys;
}

bool is_layout_key(std::string_view key) {
  const auto& k = layout_keys();
  return std::find(k.begin(), k.end(), key) != k.end();
}

Status apply_layout_setting(LayoutConstraints& c, std::string_view key, std::string_view value) {
  auto set_int = [&](std::optional<int>& field, bool allow_zero) -> Status {
    GRPO_TRY(int v, parse_int(key, value));
    if (v == 0 && !allow_zero) {
      return make_error(ErrorKind::kInvalidValue,
                        "--set " + std::string(key) + "=0: must be positive");
    }
    field = v;
    return ok_status();
  };
  auto set_bool = [&](std::optional<bool>& field) -> Status {
    GRPO_TRY(bool v, parse_bool(key, value));
    field = v;
    return ok_status();
  };
  if (key == "tp") return set_int(c.tp, false);
  if (key == "pp") return set_int(c.pp, false);
  if (key == "cp") return set_int(c.cp, false);
  if (key == "dp") return set_int(c.dp, false);
  if (key == "ep") return set_int(c.ep, false);
  if (key == "etp") return set_int(c.etp, false);
  if (key == "micro_batch") return set_int(c.micro_batch, false);
  if (key == "rollout_tp") return set_int(c.rollout_tp, false);
  if (key == "ref_tp") return set_int(c.ref_tp, false);
  if (key == "first_stage_layers") return set_int(c.first_stage_layers, false);
  if (key == "last_stage_layers") return set_int(c.last_stage_layers, false);
  if (key == "param_offload") return set_bool(c.param_offload);
  if (key == "grad_offload") return set_bool(c.grad_offload);
  if (key == "optimizer_offload") return set_bool(c.optimizer_offload);
  if (key == "cpu_optimizer") return set_bool(c.cpu_optimizer);
  if (key == "sequence_parallel") return set_bool(c.sequence_parallel);
  if (key == "distributed_optimizer") return set_bool(c.distributed_optimizer);
  if (key == "recompute") {
    if (value == "none" || value == "full") {
      c.recompute = value == "full" ? Recompute::kFull : Recompute::kNone;
      return ok_status();
    }
    return make_error(ErrorKind::kInvalidValue,
                      "--set recompute=" + std::string(value) + ": expected none or full");
  }
  return make_error(ErrorKind::kUnknownKey, "--set " + std::string(key) + ": not a layout key");
}

std::vector<Diagnostic> check_legality(const ModelSpec& m, const ClusterProfile& c,
                                       const WorkloadSpec& w, const Layout& l) {
  std::vector<Diagnostic> out;
  const ParallelDims& d = l.dims;
  const int world = c.world_size();
  const int gpn = c.gpus_per_node;
  auto add = [&](DiagCode code, std::string setting, std::string msg, std::string hint) {
    out.push_back(make_diag(code, std::move(setting), std::move(msg), std::move(hint)));
  };

  // World size: Megatron-Core initialize_model_parallel requires world % (tp*pp*cp) == 0.
  if (d.tp < 1 || d.pp < 1 || d.cp < 1 || d.dp < 1 || d.ep < 1 || d.etp < 1) {
    add(DiagCode::kInvalidSetting, "tp", "parallel sizes must be positive", "use sizes >= 1");
    return out;
  }
  if (world % d.model_parallel() != 0) {
    add(DiagCode::kWorldSizeMismatch, "tp",
        "world size " + num(world) + " is not divisible by TP x PP x CP = " + num(d.tp) + " x " +
            num(d.pp) + " x " + num(d.cp),
        "choose TP, PP and CP whose product divides " + num(world));
  } else if (d.world_size() != world) {
    add(DiagCode::kWorldSizeMismatch, "dp",
        "TP x PP x CP x DP = " + num(d.world_size()) + " but the cluster has " + num(c.nodes) +
            " x " + num(gpn) + " = " + num(world) + " devices",
        "set dp = " + num(world / d.model_parallel()) + " or leave it to the planner");
  }
  // TP inside a node: TP groups are the fastest-varying rank dimension.
  if (gpn % d.tp != 0) {
    add(DiagCode::kTpCrossesNode, "tp",
        "TP = " + num(d.tp) + " does not divide the " + num(gpn) +
            " devices per node, so a TP group would span nodes (grpo-launch keeps TP inside a "
            "node)",
        "use a TP that divides " + num(gpn));
  }
  // Heads: Megatron-Core asserts num_attention_heads % tp == 0 and num_query_groups % tp == 0.
  if (m.num_attention_heads % d.tp != 0) {
    add(DiagCode::kHeadsNotDivisible, "tp",
        num(m.num_attention_heads) + " attention heads are not divisible by TP = " + num(d.tp),
        "use a TP that divides " + num(m.num_attention_heads));
  }
  if (m.num_kv_heads % d.tp != 0) {
    add(DiagCode::kKvHeadsNotDivisible, "tp",
        num(m.num_kv_heads) + " KV heads (query groups) are not divisible by TP = " + num(d.tp),
        "use a TP that divides " + num(m.num_kv_heads));
  }
  // Layers into stages (Megatron-Core: even split, or num_layers_in_first/last_pipeline_stage).
  if (d.pp > m.num_layers) {
    add(DiagCode::kLayersNotDivisible, "pp",
        "PP = " + num(d.pp) + " exceeds the " + num(m.num_layers) + " layers",
        "use PP <= " + num(m.num_layers));
  } else if (d.pp > 1) {
    const bool uneven = l.first_stage_layers > 0 || l.last_stage_layers > 0;
    const StageSplit split =
        split_stages(static_cast<int>(m.num_layers), d.pp, l.first_stage_layers,
                     l.last_stage_layers, l.split_counts_embedding, l.split_counts_loss);
    if (!uneven && !split.ok && (l.split_counts_embedding || l.split_counts_loss)) {
      add(DiagCode::kLayersNotDivisible, "pp",
          num(m.num_layers) +
              " layers plus the embedding/loss counted as layers are not divisible by PP = " +
              num(d.pp),
          "use a PP dividing " + num(m.num_layers + (l.split_counts_embedding ? 1 : 0) +
                                     (l.split_counts_loss ? 1 : 0)));
    } else if (!uneven && !split.ok) {
      const auto suggestion = uneven_split(static_cast<int>(m.num_layers), d.pp);
      std::string hint = "use a PP that divides " + num(m.num_layers);
      if (suggestion) {
        hint += " or set num_layers_in_first_pipeline_stage=" + num(suggestion->first) +
                " and num_layers_in_last_pipeline_stage=" + num(suggestion->second);
      }
      add(DiagCode::kLayersNotDivisible, "pp",
          num(m.num_layers) + " layers are not divisible by PP = " + num(d.pp), hint);
    } else if (!split.ok) {
      add(DiagCode::kLayersNotDivisible, "first_stage_layers",
          "first/last stage layers " + num(l.first_stage_layers) + "/" + num(l.last_stage_layers) +
              " do not leave a whole number of layers for the other stages of PP = " + num(d.pp),
          "choose counts so the remaining layers divide evenly over the other stages");
    }
  } else if (l.first_stage_layers > 0 || l.last_stage_layers > 0) {
    add(DiagCode::kLayersNotDivisible, "first_stage_layers",
        "first/last stage layer counts are set but PP = 1", "remove them or use PP > 1");
  }
  // Experts (Megatron-Core: num_moe_experts % ep == 0; world % (etp*ep*pp) == 0).
  if (m.is_moe()) {
    if (m.num_experts % d.ep != 0) {
      add(DiagCode::kExpertsNotDivisible, "ep",
          num(m.num_experts) + " experts are not divisible by EP = " + num(d.ep),
          "use an EP that divides " + num(m.num_experts));
    }
    if (world % (d.etp * d.ep * d.pp) != 0) {
      add(DiagCode::kExpertsNotDivisible, "ep",
          "EP x ETP x PP = " + num(d.ep) + " x " + num(d.etp) + " x " + num(d.pp) +
              " does not divide the world size " + num(world),
          "choose EP and ETP with EP x ETP dividing " + num(world / std::max(1, d.pp)));
    }
    if (gpn % d.etp != 0) {
      add(DiagCode::kTpCrossesNode, "etp",
          "ETP = " + num(d.etp) + " does not divide the " + num(gpn) +
              " devices per node (grpo-launch keeps expert-TP groups inside a node)",
          "use an ETP that divides " + num(gpn));
    }
    if (m.moe_ffn_hidden_size % d.etp != 0) {
      add(DiagCode::kInvalidSetting, "etp",
          "expert FFN size " + num(m.moe_ffn_hidden_size) +
              " is not divisible by ETP = " + num(d.etp),
          "use an ETP that divides " + num(m.moe_ffn_hidden_size));
    }
  } else if (d.ep > 1 || d.etp > 1) {
    add(DiagCode::kExpertsNotDivisible, "ep", m.name + " is a dense model: EP and ETP must be 1",
        "remove ep/etp");
  }
  if (l.sequence_parallel && d.tp == 1) {
    add(DiagCode::kInvalidSetting, "sequence_parallel",
        "sequence parallelism needs TP > 1 (Megatron-Core raises an error; verl turns it off)",
        "turn sequence_parallel off or raise TP");
    out.back().severity = Severity::kWarning;
  }
  if (m.is_moe() && d.ep > 1 && d.tp > 1 && !l.sequence_parallel) {
    add(DiagCode::kInvalidSetting, "sequence_parallel",
        "an MoE model with EP > 1 and TP > 1 needs sequence parallelism (Megatron-Core raises a "
        "ValueError)",
        "turn sequence_parallel on");
  }
  if (l.ref_tp > 0 && l.ref_tp != d.tp) {
    add(DiagCode::kTpMismatch, "ref_tp",
        "reference TP = " + num(l.ref_tp) + " differs from actor TP = " + num(d.tp),
        "set the reference's tensor_model_parallel_size to " + num(d.tp));
  }
  // Rollout (vLLM): heads % tp == 0; KV heads divisible, or replicated when tp > kv heads.
  const int rtp = l.rollout_tp;
  if (rtp < 1 || world % rtp != 0) {
    add(DiagCode::kWorldSizeMismatch, "rollout_tp",
        "rollout TP = " + num(rtp) + " does not divide the world size " + num(world),
        "use a rollout TP dividing " + num(world));
  } else {
    if (gpn % rtp != 0) {
      add(DiagCode::kTpCrossesNode, "rollout_tp",
          "rollout TP = " + num(rtp) + " does not divide the " + num(gpn) +
              " devices per node (grpo-launch keeps rollout TP groups inside a node)",
          "use a rollout TP that divides " + num(gpn));
    }
    if (m.num_attention_heads % rtp != 0) {
      add(DiagCode::kHeadsNotDivisible, "rollout_tp",
          num(m.num_attention_heads) +
              " attention heads are not divisible by rollout TP = " + num(rtp),
          "use a rollout TP that divides " + num(m.num_attention_heads));
    }
    const bool kv_ok =
        rtp <= m.num_kv_heads ? m.num_kv_heads % rtp == 0 : rtp % m.num_kv_heads == 0;
    if (!kv_ok) {
      add(DiagCode::kKvHeadsNotDivisible, "rollout_tp",
          num(m.num_kv_heads) +
              " KV heads can be neither split nor replicated evenly over rollout TP = " + num(rtp),
          "use a rollout TP that divides or is a multiple of " + num(m.num_kv_heads));
    }
  }
  // Batches. verl splits the responses (prompts x rollout.n) of a step and of each mini batch
  // evenly over the DP ranks (DataProto.chunk asserts it). grpo-launch also keeps each GRPO
  // group of rollout.n responses on one rank (GROUP_SPLIT): the embedded trainer computes group
  // statistics locally, and verl's prefix grouping needs it.
  if (d.dp >= 1 && d.world_size() == world) {
    if (w.train_batch_size % w.ppo_mini_batch_size != 0) {
      add(DiagCode::kBatchNotDivisible, "ppo_mini_batch_size",
          "train_batch_size " + num(w.train_batch_size) +
              " is not divisible by ppo_mini_batch_size " + num(w.ppo_mini_batch_size),
          "use a mini batch size dividing " + num(w.train_batch_size));
    }
    bool whole = true;
    for (const auto& [name, prompts] :
         {std::pair<std::string, std::int64_t>{"train_batch_size", w.train_batch_size},
          {"ppo_mini_batch_size", w.ppo_mini_batch_size}}) {
      if (prompts * w.rollout_n % d.dp != 0) {
        whole = false;
        add(DiagCode::kBatchNotDivisible, name,
            num(prompts) + " prompts x rollout.n " + num(w.rollout_n) + " = " +
                num(prompts * w.rollout_n) +
                " responses do not split evenly over DP = " + num(d.dp) + " ranks",
            "make " + name + " x rollout.n divisible by DP = " + num(d.dp));
      } else if (prompts % d.dp != 0) {
        whole = false;
        add(DiagCode::kGroupSplit, name,
            name + " " + num(prompts) + " prompts do not divide over DP = " + num(d.dp) +
                " ranks, so a group of rollout.n = " + num(w.rollout_n) +
                " responses would be split across ranks",
            "use prompt batch sizes divisible by DP = " + num(d.dp));
      }
    }
    if (whole) {
      const std::int64_t per_rank = w.ppo_mini_batch_size * w.rollout_n / d.dp;
      if (l.micro_batch < 1 || per_rank % l.micro_batch != 0) {
        add(DiagCode::kBatchNotDivisible, "micro_batch",
            num(per_rank) + " responses per rank per mini batch are not divisible by micro batch " +
                num(l.micro_batch),
            "use a micro batch dividing " + num(per_rank));
      }
    }
  }
  // Precision.
  if (w.dtype == Dtype::kBf16 && !c.device.bf16) {
    add(DiagCode::kDtypeConflict, "grpo.dtype",
        "bf16 requested but " + c.device.kind + " has no bf16 support",
        "use grpo.dtype=fp16 (with loss scaling); verl's Megatron engine takes only bf16 and fp16");
  }
  if (w.dtype == Dtype::kFp32 && c.device.vendor != DeviceVendor::kCpu && !l.fsdp) {
    add(DiagCode::kDtypeConflict, "grpo.dtype",
        "fp32 training with the Megatron actor: verl's Megatron engine takes only bf16 and fp16",
        "use grpo.dtype=bf16 (or fp16 on hardware without bf16)");
  }
  return out;
}

}  // namespace grpo::core
