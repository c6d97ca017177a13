// Legality of a layout (docs/parallelism.md): Megatron-Core's and verl's rules on the actor's
// parallel sizes, stages, experts and batches, and vLLM's on the rollout's. The layout itself
// and its settings: layout.cpp.
#include <algorithm>
#include <string>
#include <tuple>
#include <utility>

#include "grpo/plan/layout.h"
#include "stage_split.h"

namespace grpo::core {
namespace {

std::string num(std::int64_t v) {
  return std::to_string(v);
}

}  // namespace

namespace {

std::int64_t pad_to(std::int64_t v, std::int64_t multiple) {
  return (v + multiple - 1) / multiple * multiple;
}

// Megatron-Core's rules on virtual pipeline stages (VPP) and on pipeline_model_parallel_layout
// (docs/parallelism.md, V1-V3 and L1-L6). Appends to `out`.
void check_virtual_pipeline(const ModelSpec& m, const Layout& l, const EngineVersions& e,
                            std::vector<Diagnostic>& out) {
  auto add = [&](DiagCode code, std::string setting, std::string msg, std::string hint) {
    out.push_back(make_diag(code, std::move(setting), std::move(msg), std::move(hint)));
  };
  const int pp = l.dims.pp;
  const int vpp = l.vpp;
  const int layers = static_cast<int>(m.num_layers);
  if (vpp > 0 && pp <= 1) {
    add(DiagCode::kInvalidSetting, "vpp",
        "virtual_pipeline_model_parallel_size = " + num(vpp) +
            " with PP = 1: Megatron-Core raises RuntimeError (\"pipeline-model-parallel size "
            "should be greater than 1 with interleaved schedule\")",
        "remove virtual_pipeline_model_parallel_size or use PP > 1");
  }
  if (!l.pipeline_layout.empty()) {
    if (e.megatron < EngineVersion{0, 13, 0}) {
      add(DiagCode::kInvalidSetting, "pipeline_layout",
          "pipeline_model_parallel_layout is new in Megatron-Core 0.13 (rules of megatron=" +
              e.megatron.str() + ")",
          "use num_layers_in_first/last_pipeline_stage, or Megatron-Core >= 0.13");
      return;
    }
    if (l.first_stage_layers > 0 || l.last_stage_layers > 0 || l.split_counts_embedding ||
        l.split_counts_loss) {
      add(DiagCode::kInvalidSetting, "pipeline_layout",
          "pipeline_model_parallel_layout cannot be set with num_layers_in_first/last_pipeline_"
          "stage or account_for_embedding/loss_in_pipeline_split (Megatron-Core raises "
          "ValueError)",
          "keep only the layout");
      return;
    }
    const PipelineLayout pl = parse_pipeline_layout(l.pipeline_layout);
    if (!pl.error.empty()) {
      add(DiagCode::kInvalidSetting, "pipeline_layout",
          "pipeline_model_parallel_layout '" + l.pipeline_layout + "': " + pl.error,
          "write stages of E (embedding), t (decoder layer), m (MTP layer) and L (loss) "
          "separated by |");
      return;
    }
    const int stages = static_cast<int>(pl.stages.size());
    if (stages % pp != 0) {
      add(DiagCode::kLayersNotDivisible, "pipeline_layout",
          "pipeline_model_parallel_layout has " + num(stages) +
              " stages, not a multiple of PP = " + num(pp),
          "give PP x VPP stages (a multiple of " + num(pp) + ")");
    } else {
      const int derived = stages / pp;
      if (vpp > 0 && vpp != derived) {
        add(DiagCode::kInvalidSetting, "vpp",
            "virtual_pipeline_model_parallel_size = " + num(vpp) + " conflicts with the layout's " +
                num(stages) + " stages over PP = " + num(pp) + " (VPP " + num(derived) +
                "; Megatron-Core asserts they agree)",
            "set virtual_pipeline_model_parallel_size=" + num(derived) + " or leave it unset");
      } else if (vpp == 0 && derived > 1) {
        add(DiagCode::kInvalidSetting, "vpp",
            "the layout has " + num(derived) + " stages per pipeline rank (VPP " + num(derived) +
                ") but virtual_pipeline_model_parallel_size is not set: verl initializes "
                "Megatron's parallel state from it and would build one model chunk per rank",
            "set virtual_pipeline_model_parallel_size=" + num(derived));
      }
    }
    std::string flat;
    for (const auto& st : pl.stages) flat += st;
    if (flat.empty() || flat.front() != 'E' || flat.back() != 'L' || pl.count('E') != 1 ||
        pl.count('L') != 1) {
      add(DiagCode::kInvalidSetting, "pipeline_layout",
          "pipeline_model_parallel_layout must start with the embedding (E) and end with the loss "
          "(L), each exactly once",
          "write the layout as E...|...|...L");
    }
    if (pl.count('t') != layers) {
      add(DiagCode::kLayersNotDivisible, "pipeline_layout",
          "pipeline_model_parallel_layout places " + num(pl.count('t')) +
              " decoder layers (t) but " + m.name + " has " + num(layers),
          "place exactly " + num(layers) + " t's");
    }
    if (pl.count('m') != 0) {
      add(DiagCode::kInvalidSetting, "pipeline_layout",
          "pipeline_model_parallel_layout places " + num(pl.count('m')) + " MTP layers (m) but " +
              m.name + " has none",
          "remove the m's");
    }
    return;
  }
  if (vpp <= 0 || pp <= 1) return;
  const StageSplit s = split_stages(layers, pp, l.first_stage_layers, l.last_stage_layers,
                                    l.split_counts_embedding, l.split_counts_loss);
  if (!s.ok) return;  // the split itself is reported (P2/P3)
  std::vector<std::pair<std::string, int>> bad;
  if (l.first_stage_layers > 0 || l.last_stage_layers > 0) {
    // TransformerConfig.__post_init__, uneven PP: each given end count and the middle stages'
    // count must be divisible by VPP.
    const int middle_stages = pp - (l.first_stage_layers > 0) - (l.last_stage_layers > 0);
    if (l.first_stage_layers > 0 && l.first_stage_layers % vpp != 0)
      bad.emplace_back("first stage", l.first_stage_layers);
    if (l.last_stage_layers > 0 && l.last_stage_layers % vpp != 0)
      bad.emplace_back("last stage", l.last_stage_layers);
    if (middle_stages > 0 && s.middle % vpp != 0) bad.emplace_back("other stages", s.middle);
  } else {
    // get_num_layers_to_build: (layers [+ embedding + loss]) / PP per rank, divisible by VPP.
    const int per_rank =
        (layers + (l.split_counts_embedding ? 1 : 0) + (l.split_counts_loss ? 1 : 0)) / pp;
    if (per_rank % vpp != 0) bad.emplace_back("each stage", per_rank);
  }
  if (!bad.empty()) {
    std::string list;
    for (const auto& [what, n] : bad) list += (list.empty() ? "" : ", ") + what + " " + num(n);
    add(DiagCode::kLayersNotDivisible, "vpp",
        "layers per pipeline stage (" + list + ") are not divisible by VPP = " + num(vpp) +
            ": each virtual stage must get a whole number of layers",
        "use a VPP dividing every stage's layer count");
  }
}

// The fixed micro batch (ppo_micro_batch_size_per_gpu) against verl's rules at b178a3cd
// (docs/parallelism.md "Micro batches"). Appends to `out`.
void check_micro_batches(const WorkloadSpec& w, const Layout& l, std::vector<Diagnostic>& out) {
  auto add = [&](std::string msg, std::string hint) {
    out.push_back(
        make_diag(DiagCode::kBatchNotDivisible, "micro_batch", std::move(msg), std::move(hint)));
  };
  const ParallelDims& d = l.dims;
  const std::int64_t per_rank = w.ppo_mini_batch_size * w.rollout_n / d.dp;
  if (l.micro_batch < 1) {
    add("micro batch " + num(l.micro_batch) + " is not a positive size", "use a micro batch >= 1");
    return;
  }
  if (l.backend != Backend::kMegatron) {
    // verl's FSDP worker asserts it at start-up, a micro batch above the rows included (it is
    // not clamped): "normalized ppo_mini_batch_size ... should be divisible by
    // ppo_micro_batch_size_per_gpu" and "... should be larger than ppo_micro_batch_size_per_gpu"
    // (verl/workers/fsdp_workers.py ActorRolloutRefWorker.__init__). grpo-trainer splits a rank's
    // rows into whole micro batches too.
    if (per_rank % l.micro_batch != 0) {
      add(num(per_rank) + " responses per rank per mini batch are not divisible by micro batch " +
              num(l.micro_batch),
          "use a micro batch dividing " + num(per_rank));
    }
    return;
  }
  // Megatron: verl/workers/actor/megatron_actor.py forward_backward_batch splits each mini batch
  // with `batch.split(micro_batch_size)`, so the last micro batch may be short and one above the
  // rows is the whole mini batch; megatron_workers.py asserts nothing on it. What fails at once is
  // verl/utils/config.py validate_config (without use_dynamic_bsz): train_batch_size x rollout.n
  // must be divisible by Megatron DP x micro batch.
  const std::int64_t responses = w.train_batch_size * w.rollout_n;
  if (!w.dynamic_batch() && responses % (d.dp * l.micro_batch) != 0) {
    add(num(w.train_batch_size) + " prompts x rollout.n " + num(w.rollout_n) + " = " +
            num(responses) + " responses are not divisible by DP " + num(d.dp) + " x micro batch " +
            num(l.micro_batch) + " (verl's validate_config asserts it for Megatron)",
        "use a micro batch dividing " + num(responses / d.dp));
    return;
  }
  if (l.vpp > 0 && d.pp > 1) {
    // forward_backward_pipelining_with_interleaving: micro batches in groups of
    // microbatch_group_size_per_vp_stage (default PP), at least one whole group.
    const std::int64_t micro = (per_rank + l.micro_batch - 1) / l.micro_batch;
    if (micro < d.pp || micro % d.pp != 0) {
      add(num(micro) + " micro batches per mini batch (" + num(per_rank) +
              " responses / micro batch " + num(l.micro_batch) +
              ") with the interleaved schedule (VPP = " + num(l.vpp) +
              ") must be a multiple of PP = " + num(d.pp) + " and at least PP",
          "choose a micro batch giving a multiple of " + num(d.pp) + " micro batches");
    }
  }
}

}  // namespace

std::vector<Diagnostic> check_rollout_legality(const ModelSpec& m, const ClusterProfile& c,
                                               const Layout& l, const EngineVersions& e) {
  std::vector<Diagnostic> out;
  auto add = [&](DiagCode code, std::string msg, std::string hint) {
    out.push_back(make_diag(code, "rollout_tp", std::move(msg), std::move(hint)));
  };
  const int world = c.world_size();
  const int gpn = c.gpus_per_node;
  const int rtp = l.rollout_tp;
  const int rdp = std::max(1, l.rollout_dp);
  const int rpp = std::max(1, l.rollout_pp);
  const std::int64_t replica = static_cast<std::int64_t>(rtp) * rdp * rpp;
  // R1. verl _build_rollout: world_size % (rollout TP x DP x PP) == 0.
  if (rtp < 1 || world % replica != 0) {
    const bool plain = rdp == 1 && rpp == 1;
    add(DiagCode::kWorldSizeMismatch,
        (plain ? "rollout TP = " + num(rtp)
               : "rollout TP x DP x PP = " + num(rtp) + " x " + num(rdp) + " x " + num(rpp) +
                     " = " + num(replica)) +
            " does not divide the world size " + num(world),
        plain ? "use a rollout TP dividing " + num(world)
              : "choose rollout TP, DP and PP whose product divides " + num(world));
    return out;
  }
  // R2. verl RolloutReplica: a replica larger than a node spans whole nodes; a smaller one gets
  // the next `replica` ranks, so it must divide the node to stay inside one.
  if (replica <= gpn ? gpn % replica != 0 : replica % gpn != 0) {
    add(DiagCode::kTpCrossesNode,
        "a rollout replica of " + num(replica) + " devices (rollout TP x DP x PP) " +
            (replica < gpn ? "does not divide the " + num(gpn) +
                                 " devices per node, so some replica would straddle two nodes"
                           : "does not span whole nodes of " + num(gpn) +
                                 " devices (verl's RolloutReplica asserts world_size % "
                                 "gpus_per_node == 0)"),
        "use a rollout TP that divides " + num(gpn) + " or is a multiple of it");
  }
  // R3. vLLM ModelConfig.verify_with_parallel_config.
  if (m.num_attention_heads % rtp != 0) {
    add(DiagCode::kHeadsNotDivisible,
        num(m.num_attention_heads) +
            " attention heads are not divisible by rollout TP = " + num(rtp),
        "use a rollout TP that divides " + num(m.num_attention_heads));
  }
  // R4. vLLM QKVParallelLinear: KV heads split, or replicated when rollout TP exceeds them.
  const bool kv_ok = rtp <= m.num_kv_heads ? m.num_kv_heads % rtp == 0 : rtp % m.num_kv_heads == 0;
  if (!kv_ok) {
    add(DiagCode::kKvHeadsNotDivisible,
        num(m.num_kv_heads) +
            " KV heads can be neither split nor replicated evenly over rollout "
            "TP = " +
            num(rtp),
        "use a rollout TP that divides or is a multiple of " + num(m.num_kv_heads));
  }
  // R5. vLLM MergedColumnParallelLinear / RowParallelLinear: the dense and shared-expert FFN.
  const std::int64_t shared = m.num_shared_experts * m.shared_expert_ffn_hidden_size;
  for (const auto& [what, size] : {std::pair<std::string, std::int64_t>{
                                       "FFN size", m.dense_layers() > 0 ? m.ffn_hidden_size : 0},
                                   {"shared-expert FFN size", shared}}) {
    if (size > 0 && size % rtp != 0) {
      add(DiagCode::kInvalidSetting,
          what + " " + num(size) + " is not divisible by rollout TP = " + num(rtp) +
              " (vLLM splits the MLP over its TP ranks)",
          "use a rollout TP that divides " + num(size));
    }
  }
  // R6. vLLM VocabParallelEmbedding / ParallelLMHead: the vocabulary padded to 64, split by TP.
  if (m.vocab_size > 0 && pad_to(m.vocab_size, 64) % rtp != 0) {
    add(DiagCode::kInvalidSetting,
        "vocabulary " + num(m.vocab_size) + " (padded to " + num(pad_to(m.vocab_size, 64)) +
            ") is not divisible by rollout TP = " + num(rtp),
        "use a rollout TP that divides " + num(pad_to(m.vocab_size, 64)));
  }
  // R7. vLLM FusedMoE: each expert's FFN split over TP, unless expert parallelism is on (verl
  // passes enable_expert_parallel when rollout.expert_parallel_size > 1).
  if (m.is_moe() && l.rollout_ep <= 1 && m.moe_ffn_hidden_size % rtp != 0) {
    add(DiagCode::kInvalidSetting,
        "expert FFN size " + num(m.moe_ffn_hidden_size) + " is not divisible by rollout TP = " +
            num(rtp) + " (vLLM's fused MoE splits every expert over TP)",
        "use a rollout TP that divides " + num(m.moe_ffn_hidden_size) +
            ", or rollout.expert_parallel_size > 1");
  }
  // R8. vLLM vision towers (Qwen2.5-VL, Qwen3-VL): heads split over TP unless
  // mm_encoder_tp_mode=data (vLLM >= 0.10.2) replicates the tower.
  const bool data_mode = l.vision_data_parallel && e.vllm >= EngineVersion{0, 10, 2};
  if (m.vision.present() && m.vision.num_heads > 0 && !data_mode && m.vision.num_heads % rtp != 0) {
    add(DiagCode::kHeadsNotDivisible,
        "the vision tower's " + num(m.vision.num_heads) +
            " attention heads are not divisible by rollout TP = " + num(rtp),
        e.vllm >= EngineVersion{0, 10, 2}
            ? "use a rollout TP that divides " + num(m.vision.num_heads) +
                  ", or engine_kwargs.vllm.mm_encoder_tp_mode=data"
            : "use a rollout TP that divides " + num(m.vision.num_heads));
  }
  return out;
}

namespace {

void add(std::vector<Diagnostic>& out, DiagCode code, std::string setting, std::string msg,
         std::string hint) {
  out.push_back(make_diag(code, std::move(setting), std::move(msg), std::move(hint)));
}

// The world size, TP inside a node, heads, query groups and what Megatron's TP splits; false
// when the sizes are not even positive (nothing else can be checked).
bool check_world_and_tp(const ModelSpec& m, const ClusterProfile& c, const Layout& l,
                        const EngineVersions& e, std::vector<Diagnostic>& out) {
  const ParallelDims& d = l.dims;
  const int world = c.world_size();
  const int gpn = c.gpus_per_node;
  // World size: Megatron-Core initialize_model_parallel requires world % (tp*pp*cp) == 0.
  if (d.tp < 1 || d.pp < 1 || d.cp < 1 || d.dp < 1 || d.ep < 1 || d.etp < 1) {
    add(out, DiagCode::kInvalidSetting, "tp", "parallel sizes must be positive", "use sizes >= 1");
    return false;
  }
  if (world % d.model_parallel() != 0) {
    add(out, DiagCode::kWorldSizeMismatch, "tp",
        "world size " + num(world) + " is not divisible by TP x PP x CP = " + num(d.tp) + " x " +
            num(d.pp) + " x " + num(d.cp),
        "choose TP, PP and CP whose product divides " + num(world));
  } else if (d.world_size() != world) {
    add(out, DiagCode::kWorldSizeMismatch, "dp",
        "TP x PP x CP x DP = " + num(d.world_size()) + " but the cluster has " + num(c.nodes) +
            " x " + num(gpn) + " = " + num(world) + " devices",
        "set dp = " + num(world / d.model_parallel()) + " or leave it to the planner");
  }
  // TP inside a node: TP groups are the fastest-varying rank dimension.
  if (gpn % d.tp != 0) {
    add(out, DiagCode::kTpCrossesNode, "tp",
        "TP = " + num(d.tp) + " does not divide the " + num(gpn) +
            " devices per node, so a TP group would span nodes (grpo-launch keeps TP inside a "
            "node)",
        "use a TP that divides " + num(gpn));
  }
  // Heads: Megatron-Core TransformerConfig.__post_init__.
  if (m.num_attention_heads % d.tp != 0) {
    add(out, DiagCode::kHeadsNotDivisible, "tp",
        num(m.num_attention_heads) + " attention heads are not divisible by TP = " + num(d.tp),
        "use a TP that divides " + num(m.num_attention_heads));
  }
  // Query groups: num_query_groups % tp == 0 through core 0.15; from 0.16 TP may also be a
  // multiple of them (the KV heads are then replicated).
  const bool kv_relaxed = e.megatron >= EngineVersion{0, 16, 0};
  const bool kv_ok = m.num_kv_heads % d.tp == 0 ||
                     (kv_relaxed && m.num_kv_heads > 0 && d.tp % m.num_kv_heads == 0);
  if (!kv_ok) {
    add(out, DiagCode::kKvHeadsNotDivisible, "tp",
        num(m.num_kv_heads) + " KV heads (query groups) are not " +
            (kv_relaxed ? "divisible by, nor a divisor of, " : "divisible by ") +
            "TP = " + num(d.tp) + " (Megatron-Core " + e.megatron.str() + ")",
        kv_relaxed ? "use a TP that divides or is a multiple of " + num(m.num_kv_heads)
                   : "use a TP that divides " + num(m.num_kv_heads) +
                         " (Megatron-Core >= 0.16 also accepts multiples)");
  }
  if (l.backend != Backend::kFsdp) {
    // Megatron's TE column/row-parallel linears divide the FFN by TP; its vocabulary-parallel
    // embedding and output layer divide the vocabulary (verl's mbridge does not pad it).
    const std::int64_t shared = m.num_shared_experts * m.shared_expert_ffn_hidden_size;
    for (const auto& [what, size] : {std::pair<std::string, std::int64_t>{
                                         "FFN size", m.dense_layers() > 0 ? m.ffn_hidden_size : 0},
                                     {"shared-expert FFN size", shared},
                                     {"vocabulary", m.vocab_size}}) {
      if (size > 0 && size % d.tp != 0) {
        add(out, DiagCode::kInvalidSetting, "tp",
            what + " " + num(size) + " is not divisible by TP = " + num(d.tp),
            "use a TP that divides " + num(size));
      }
    }
  }
  return true;
}

void check_stages(const ModelSpec& m, const Layout& l, std::vector<Diagnostic>& out) {
  const ParallelDims& d = l.dims;
  // Layers into stages (Megatron-Core: even split, or num_layers_in_first/last_pipeline_stage).
  if (!l.pipeline_layout.empty() && l.backend != Backend::kFsdp) {
    // The layout replaces the split rules (get_num_layers_to_build reads it first).
  } else if (d.pp > m.num_layers) {
    add(out, DiagCode::kLayersNotDivisible, "pp",
        "PP = " + num(d.pp) + " exceeds the " + num(m.num_layers) + " layers",
        "use PP <= " + num(m.num_layers));
  } else if (d.pp > 1) {
    const bool uneven = l.first_stage_layers > 0 || l.last_stage_layers > 0;
    const StageSplit split =
        split_stages(static_cast<int>(m.num_layers), d.pp, l.first_stage_layers,
                     l.last_stage_layers, l.split_counts_embedding, l.split_counts_loss);
    if (!uneven && !split.ok && (l.split_counts_embedding || l.split_counts_loss)) {
      add(out, DiagCode::kLayersNotDivisible, "pp",
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
      add(out, DiagCode::kLayersNotDivisible, "pp",
          num(m.num_layers) + " layers are not divisible by PP = " + num(d.pp), hint);
    } else if (!split.ok) {
      add(out, DiagCode::kLayersNotDivisible, "first_stage_layers",
          "first/last stage layers " + num(l.first_stage_layers) + "/" + num(l.last_stage_layers) +
              " do not leave a whole number of layers for the other stages of PP = " + num(d.pp),
          "choose counts so the remaining layers divide evenly over the other stages");
    }
  } else if (l.first_stage_layers > 0 || l.last_stage_layers > 0) {
    add(out, DiagCode::kLayersNotDivisible, "first_stage_layers",
        "first/last stage layer counts are set but PP = 1", "remove them or use PP > 1");
  }
}

// Experts over EP and ETP, and sequence parallelism with TP (MoE needs it).
void check_experts(const ModelSpec& m, const ClusterProfile& c, const Layout& l,
                   const EngineVersions& e, std::vector<Diagnostic>& out) {
  const ParallelDims& d = l.dims;
  const int world = c.world_size();
  const int gpn = c.gpus_per_node;
  // Experts (Megatron-Core: num_moe_experts % ep == 0; world % (etp*ep*pp) == 0).
  if (m.is_moe()) {
    if (m.num_experts % d.ep != 0) {
      add(out, DiagCode::kExpertsNotDivisible, "ep",
          num(m.num_experts) + " experts are not divisible by EP = " + num(d.ep),
          "use an EP that divides " + num(m.num_experts));
    }
    if (world % (d.etp * d.ep * d.pp) != 0) {
      add(out, DiagCode::kExpertsNotDivisible, "ep",
          "EP x ETP x PP = " + num(d.ep) + " x " + num(d.etp) + " x " + num(d.pp) +
              " does not divide the world size " + num(world),
          "choose EP and ETP with EP x ETP dividing " + num(world / std::max(1, d.pp)));
    }
    if (gpn % d.etp != 0) {
      add(out, DiagCode::kTpCrossesNode, "etp",
          "ETP = " + num(d.etp) + " does not divide the " + num(gpn) +
              " devices per node (grpo-launch keeps expert-TP groups inside a node)",
          "use an ETP that divides " + num(gpn));
    }
    if (m.moe_ffn_hidden_size % d.etp != 0) {
      add(out, DiagCode::kInvalidSetting, "etp",
          "expert FFN size " + num(m.moe_ffn_hidden_size) +
              " is not divisible by ETP = " + num(d.etp),
          "use an ETP that divides " + num(m.moe_ffn_hidden_size));
    }
  } else if (d.ep > 1 || d.etp > 1) {
    add(out, DiagCode::kExpertsNotDivisible, "ep",
        m.name + " is a dense model: EP and ETP must be 1", "remove ep/etp");
  }
  if (l.sequence_parallel && d.tp == 1) {
    add(out, DiagCode::kInvalidSetting, "sequence_parallel",
        "sequence parallelism needs TP > 1 (Megatron-Core raises an error; verl turns it off)",
        "turn sequence_parallel off or raise TP");
    out.back().severity = Severity::kWarning;
  }
  // MoE with TP > 1 needs sequence parallelism in training: MoELayer.forward raises ValueError
  // in every core version; before 0.15 ModelParallelConfig already refuses EP > 1 and TP > 1.
  if (m.is_moe() && d.tp > 1 && !l.sequence_parallel && l.backend != Backend::kFsdp) {
    const bool config_check = e.megatron < EngineVersion{0, 15, 0} && d.ep > 1;
    add(out, DiagCode::kInvalidSetting, "sequence_parallel",
        config_check
            ? "an MoE model with EP > 1 and TP > 1 needs sequence parallelism (Megatron-Core " +
                  e.megatron.str() + "'s ModelParallelConfig raises ValueError)"
            : "an MoE model with TP > 1 needs sequence parallelism in training (Megatron-Core's "
              "MoELayer.forward raises ValueError at the first training step)",
        "turn sequence_parallel on");
  }
}

void check_reference_and_cp(const WorkloadSpec& w, const Layout& l, std::vector<Diagnostic>& out) {
  const ParallelDims& d = l.dims;
  // verl builds one Megatron parallel state per process from the actor's sizes; the
  // reference model lives in it, so its own TP/PP do not give it another layout.
  for (const auto& [name, ref, actor] :
       {std::tuple<std::string, int, int>{"TP", l.ref_tp, d.tp}, {"PP", l.ref_pp, d.pp}}) {
    if (ref > 0 && ref != actor) {
      add(out, DiagCode::kTpMismatch, name == "TP" ? "ref_tp" : "ref_pp",
          "reference " + name + " = " + num(ref) + " differs from actor " + name + " = " +
              num(actor) +
              ": verl builds one Megatron parallel state from the actor's sizes and runs the "
              "reference in it",
          "set the reference's size to " + num(actor) + " or remove it");
      out.back().severity = Severity::kWarning;
    }
  }
  // Context parallelism needs verl's packed (thd) input: the padded path asserts cp_size == 1.
  if (l.backend != Backend::kFsdp && d.cp > 1 && !w.remove_padding) {
    add(out, DiagCode::kInvalidSetting, "remove_padding",
        "CP = " + num(d.cp) +
            " with use_remove_padding=False: verl's padded (bshd) input path asserts "
            "\"Context parallel size without seq_pack is not supported\"",
        "set use_remove_padding=True or CP = 1");
  }
}

void check_batches(const ClusterProfile& c, const WorkloadSpec& w, const Layout& l,
                   std::vector<Diagnostic>& out) {
  const ParallelDims& d = l.dims;
  const int world = c.world_size();
  // Batches. verl splits the responses (prompts x rollout.n) of a step and of each mini batch
  // evenly over the DP ranks (DataProto.chunk asserts it). A GRPO group may be split across
  // ranks: verl computes the advantages on the driver, grouped by uid.
  if (d.dp >= 1 && d.world_size() == world) {
    if (w.train_batch_size % w.ppo_mini_batch_size != 0) {
      add(out, DiagCode::kBatchNotDivisible, "ppo_mini_batch_size",
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
        add(out, DiagCode::kBatchNotDivisible, name,
            num(prompts) + " prompts x rollout.n " + num(w.rollout_n) + " = " +
                num(prompts * w.rollout_n) +
                " responses do not split evenly over DP = " + num(d.dp) + " ranks",
            "make " + name + " x rollout.n divisible by DP = " + num(d.dp));
      }
    }
    const std::int64_t responses = w.train_batch_size * w.rollout_n;
    if (whole && l.backend == Backend::kFsdp && !w.dynamic_batch() && responses % world != 0) {
      // verl/utils/config.py validate_config (without use_dynamic_bsz): FSDP's minimal batch is
      // every device, Ulysses ranks included, not only the data-parallel ones.
      whole = false;
      add(out, DiagCode::kBatchNotDivisible, "train_batch_size",
          num(w.train_batch_size) + " prompts x rollout.n " + num(w.rollout_n) + " = " +
              num(responses) + " responses are not divisible by the " + num(world) +
              " devices (verl's validate_config asserts it for FSDP, Ulysses ranks included)",
          "make train_batch_size x rollout.n divisible by " + num(world));
    }
    if (whole) check_micro_batches(w, l, out);
  }
}

void check_precision(const ClusterProfile& c, const WorkloadSpec& w, const Layout& l,
                     std::vector<Diagnostic>& out) {
  // Precision.
  if (w.dtype == Dtype::kBf16 && !c.device.bf16) {
    add(out, DiagCode::kDtypeConflict, "grpo.dtype",
        "bf16 requested but " + c.device.kind + " has no bf16 support",
        "use grpo.dtype=fp16 (with loss scaling); verl's Megatron engine takes only bf16 and fp16");
  }
  if (w.dtype == Dtype::kFp32 && c.device.vendor != DeviceVendor::kCpu &&
      l.backend != Backend::kFsdp) {
    add(out, DiagCode::kDtypeConflict, "grpo.dtype",
        "fp32 training with the Megatron actor: verl's Megatron engine takes only bf16 and fp16",
        "use grpo.dtype=bf16 (or fp16 on hardware without bf16)");
  }
}

}  // namespace

std::vector<Diagnostic> check_legality(const ModelSpec& m, const ClusterProfile& c,
                                       const WorkloadSpec& w, const Layout& l,
                                       const EngineVersions& e) {
  std::vector<Diagnostic> out;
  if (!check_world_and_tp(m, c, l, e, out)) return out;
  check_stages(m, l, out);
  if (l.backend != Backend::kFsdp) check_virtual_pipeline(m, l, e, out);
  check_experts(m, c, l, e, out);
  check_reference_and_cp(w, l, out);
  for (auto& dg : check_rollout_legality(m, c, l, e)) out.push_back(std::move(dg));
  check_batches(c, w, l, out);
  check_precision(c, w, l, out);
  return out;
}

}  // namespace grpo::core
